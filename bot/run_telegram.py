"""`groundbot telegram`: read the config, build the App and the Telegram adapter, and serve
by long polling or (with --webhook) on a webhook that checks Telegram's secret token."""

from __future__ import annotations

import argparse
import re
import sys
from typing import Any

from adapters.telegram import TelegramBot, TelegramOptions, WebhookOptions
from bot.config import Config
from core.ports import Backend

# what Telegram accepts as a webhook secret token
_SECRET_RE = re.compile(r"^[A-Za-z0-9_-]{1,256}$")


def telegram_options(cfg: Config) -> TelegramOptions:
    """Map config.toml and the token from the environment onto the adapter's settings."""
    t = cfg.telegram
    token = cfg.secret(t.token_env)
    if not token:
        raise ValueError(f"set the environment variable {t.token_env} to the bot token from @BotFather")
    refusal = cfg.core.refusal.messages.get("en") or TelegramOptions(token=token).refusal_message
    admins = tuple(int(a) for a in cfg.admins.get("telegram", ()) if str(a).lstrip("-").isdigit())
    return TelegramOptions(token=token, base_url=t.base_url, max_message_chars=t.max_message_chars,
                           rate_limit_per_minute=t.rate_limit_per_minute, refusal_message=refusal, admin_ids=admins)


def webhook_options(cfg: Config, *, port: int | None = None, listen: str | None = None) -> WebhookOptions:
    """Webhook mode needs a public URL and a secret token; refuse to start without either."""
    t = cfg.telegram
    secret = cfg.secret(t.webhook_secret_env)
    if not secret:
        raise ValueError(f"webhook mode needs a secret token: set the environment variable {t.webhook_secret_env}")
    if not _SECRET_RE.match(secret):
        raise ValueError(f"{t.webhook_secret_env} may only hold 1-256 characters A-Z, a-z, 0-9, _ and -")
    if not t.webhook_url:
        raise ValueError("webhook mode needs telegram.webhook_url in config.toml (the public https URL)")
    return WebhookOptions(url=t.webhook_url, secret_token=secret, listen=listen or t.webhook_listen,
                          port=t.webhook_port if port is None else port)


def build_bot(cfg: Config, backend: Backend) -> TelegramBot:
    return TelegramBot(backend, telegram_options(cfg))


def cmd_telegram(cfg: Config, args: argparse.Namespace) -> int:
    # check settings before loading models, so a missing token fails in a second, not ten
    try:
        telegram_options(cfg)
        webhook = webhook_options(cfg, port=args.port, listen=args.listen) if args.webhook else None
    except ValueError as exc:
        print(f"groundbot telegram: {exc}", file=sys.stderr)
        return 2
    from bot.app import ready_app

    app = ready_app(cfg)
    bot = build_bot(cfg, app)
    mode = f"webhook on {webhook.listen}:{webhook.port}/{webhook.url_path}" if webhook else "long polling"

    def ready(username: str) -> None:
        print(f"groundbot is answering on Telegram as @{username} ({mode}). Press Ctrl-C to stop.", file=sys.stderr)

    bot.run(webhook, ready)
    return 0


def register(sub: Any) -> None:
    s = sub.add_parser("telegram", help="run the Telegram bot (long polling, or --webhook)")
    s.add_argument("--webhook", action="store_true",
                   help="receive updates on a webhook (telegram.webhook_url) instead of polling")
    s.add_argument("--port", type=int, default=None, help="webhook port (default: telegram.webhook_port)")
    s.add_argument("--listen", default=None, help="webhook bind address (default: telegram.webhook_listen)")
    s.set_defaults(func=cmd_telegram)
