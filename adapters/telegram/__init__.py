"""Telegram adapter: python-telegram-bot updates in, core `Incoming` messages to the backend,
decisions back out as Telegram replies with buttons.

By concern: `rendering` (text and buttons), `limits` (flood control, per-user rate, per-chat
order), `threads` (which conversation a message joins), `sending` (replies in pieces, typing), `handlers` and
`admin` (updates to backend calls), `lifecycle` (the Application). It knows nothing about
config files or storage: bot/cli/run_telegram.py hands it a `Backend` and plain settings values.
The pipeline is synchronous, so every backend call runs in a worker thread.
"""

from adapters.telegram.lifecycle import ALLOWED_UPDATES, TelegramBot
from adapters.telegram.options import TelegramOptions, WebhookOptions

__all__ = ["ALLOWED_UPDATES", "TelegramBot", "TelegramOptions", "WebhookOptions"]
