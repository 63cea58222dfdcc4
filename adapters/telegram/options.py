"""The plain settings values the Telegram adapter takes; bot/cli/run_telegram.py fills them from
config.toml and the environment (the adapter never reads either)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit


@dataclass(frozen=True)
class TelegramOptions:
    """Settings values the adapter needs; bot/cli/run_telegram.py maps config.toml onto these."""

    token: str
    base_url: str = ""  # a self-hosted Bot API server, e.g. http://127.0.0.1:8081/bot; empty = api.telegram.org
    max_message_chars: int = 2000
    rate_limit_per_minute: int = 20
    refusal_messages: Mapping[str, str] = field(default_factory=dict)  # by language; the catalogue's where none
    concurrency: int = 4  # updates handled at once; each may hold one worker thread in the pipeline
    poll_timeout_s: int = 10  # long-polling timeout of getUpdates
    retry_attempts: int = 3  # retries of one Bot API call after a 429
    max_retry_wait_s: float = 30.0  # a 429 asking for a longer wait is not retried
    admin_ids: tuple[int, ...] = ()  # admins' user ids: their private chats get the review queue's cards

    @property
    def bot_id(self) -> str:
        """The bot's own id, the token's part before the colon: message uids and delivery keys carry it."""
        return self.token.split(":", 1)[0]


@dataclass(frozen=True)
class WebhookOptions:
    """Where Telegram posts updates and the secret it must send with each one."""

    url: str  # the public https URL registered with setWebhook
    secret_token: str
    listen: str = "0.0.0.0"
    port: int = 8443

    @property
    def url_path(self) -> str:
        """The local path to serve: the path of the public URL (a reverse proxy keeps it)."""
        return urlsplit(self.url).path.strip("/")
