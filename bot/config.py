"""Read configuration once: config.toml (optional), then `GROUNDBOT_<TABLE>__<KEY>` environment
variables over it, the secrets the `*_env` settings name, and CLI overrides.

The settings dataclasses are the one schema: their defaults are the only defaults, and
bot/schema.py derives config.toml's tables and keys from them. A new setting is one field:
on a table's dataclass here or in core/settings.py, or a new table as one field of `Config`
(a dataclass-typed field is the table of its own name), plus its line in config.toml.
This is the only module that reads os.environ, and it never writes it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BeforeValidator

from bot.schema import at, environment_tables, flattened, layout, load_toml, table, without_file
from bot.scopes import ScopeMap, ScopeSettings, ScopingSettings, check_scopes, parse_scopes
from bot.source_settings import check_sources, parse_sources
from core.profiles import THRESHOLD_KEYS
from core.settings import CoreSettings
from storage.index.ann import SearchIndexSettings
from storage.ingestion.sources.base import SourceSpec
from storage.settings import ChunkSettings


@dataclass(frozen=True)
class OpenAISettings:
    base_url: str = "http://127.0.0.1:8000/v1"
    model: str = "gpt-4o-mini"
    api_key_env: str = "GROUNDBOT_OPENAI_API_KEY"
    timeout_s: float = 8.0
    max_retries: int = 1
    max_tokens: int = 400
    logprobs: bool = True
    rewrite_follow_ups: bool = True  # one rewrite call per turn with earlier turns (core/retrieve/search.py)
    rewrite_timeout_s: float = 2.0  # past it (or on any failure) the local resolver's reading stands


@dataclass(frozen=True)
class TelegramSettings:
    token_env: str = "GROUNDBOT_TELEGRAM_TOKEN"
    webhook_secret_env: str = "GROUNDBOT_TELEGRAM_WEBHOOK_SECRET"
    base_url: str = ""
    webhook_url: str = ""
    webhook_listen: str = "0.0.0.0"
    webhook_port: int = 8443
    max_message_chars: int = 2000
    rate_limit_per_minute: int = 20


@dataclass(frozen=True)
class SlackSettings:
    bot_token_env: str = "GROUNDBOT_SLACK_BOT_TOKEN"
    app_token_env: str = "GROUNDBOT_SLACK_APP_TOKEN"
    signing_secret_env: str = "GROUNDBOT_SLACK_SIGNING_SECRET"
    api_base_url: str = ""
    http_port: int = 3000
    admin_channel: str = ""  # channel id the review queue's cards are posted to (with buttons)
    # a thread reply of someone groundbot answered in that channel thread is a follow-up without a
    # mention (needs the message.channels / message.groups events: docs/slack.md)
    thread_follow_ups: bool = True


def _proxy_address(value: str) -> str:
    """An IP address (10.0.0.2, ::1) or network (10.0.0.0/8): whom a forwarded-for header is taken from."""
    import ipaddress

    try:
        ipaddress.ip_network(value) if "/" in value else ipaddress.ip_address(value)
    except ValueError:
        raise ValueError(f"{value!r} is not an IP address or network (such as 10.0.0.2 or 10.0.0.0/8)") from None
    return value


ProxyAddress = Annotated[str, AfterValidator(_proxy_address)]


@dataclass(frozen=True)
class ServeSettings:
    """`groundbot serve`: one HTTP port for Slack, the Telegram webhook, /api/ask and operations."""

    host: str = "127.0.0.1"
    port: int = 8080
    workers: int = 1
    api_token_env: str = "GROUNDBOT_API_TOKEN"
    review_token_env: str = "GROUNDBOT_REVIEW_TOKEN"  # when set, /review is the review queue's web page
    review_session_hours: float = 8.0  # how long a sign-in to the /review page lasts
    # with [[scopes]]: the one scope /api/ask answers without a token ("" = a token is required)
    open_api_scope: str = ""
    slack_path: str = "/slack/events"
    telegram_path: str = "/telegram"
    conversation_lease_s: float = 60.0
    delivery_stale_s: float = 15.0  # a claim its worker stopped renewing this long is taken over
    sync_check_s: float = 30.0  # how often each worker looks for [[sources]] whose interval has passed
    sync_lease_s: float = 120.0  # a sync's lease; one left by a killed worker expires after this
    # /metrics asks for this variable's value as a bearer token; without one (and with an /api/ask
    # token set) it answers loopback requests only (bot/server/scope_access.py)
    metrics_token_env: str = "GROUNDBOT_METRICS_TOKEN"
    # reverse proxies whose X-Forwarded-For names the client (addresses or networks); () = the peer is the client
    trusted_proxies: tuple[ProxyAddress, ...] = ()
    # wrong credentials (tokens, /review sign-ins, Slack signatures, Telegram secrets) before 429 (bot/server/attempts.py)
    wrong_credentials_per_client: int = 10  # from one client address within the window; 0 = no limit
    wrong_credentials_total: int = 100  # at one route within the window, from every client together; 0 = no limit
    wrong_credentials_window_s: float = 60.0


@dataclass(frozen=True)
class IndexStorageSettings:
    """LanceDB `storage_options` for an object-store `storage.index_uri` (S3 or S3-compatible).
    Credentials are never stored here: `*_env` names the environment variable holding each."""

    endpoint: str = ""
    region: str = ""
    allow_http: bool = False
    access_key_id_env: str = "GROUNDBOT_INDEX_ACCESS_KEY_ID"
    secret_access_key_env: str = "GROUNDBOT_INDEX_SECRET_ACCESS_KEY"


@dataclass(frozen=True)
class LogSettings:
    """Log lines: "text" for a terminal, "json" (one object per line, with turn_uid and
    conversation while a turn runs) for a log collector; see bot/logs/setup.py."""

    format: Literal["text", "json"] = "text"
    level: Literal["debug", "info", "warning", "error"] = "warning"


# platform user ids: Telegram's are numbers in config.toml, compared as strings
UserIds = tuple[Annotated[str, BeforeValidator(str)], ...]


def _default_admins() -> dict[str, tuple[str, ...]]:
    return {"console": ("local",), "telegram": (), "slack": ()}


@dataclass(frozen=True)
class Config:
    """Everything groundbot reads from config.toml; the metadata says where a field lives there."""

    data_dir: Path = field(default=Path(".groundbot"), metadata=at("paths"))
    kb_paths: tuple[str, ...] = field(default=("docs",), metadata=at("paths"))
    reingest_roots: tuple[str, ...] = field(default=(), metadata=at("paths"))
    database_url: str = field(default="", metadata=at("storage"))
    # the environment variable holding a database URL with its password, so none is written in a file
    database_url_env: str = field(default="GROUNDBOT_DATABASE_URL", metadata=at("storage"))
    lock_budget_s: float = field(default=10.0, metadata=at("storage"))
    index_uri: str = field(default="", metadata=at("storage"))
    embedder: str = field(default="minilm", metadata=at("embedder", "name"))
    embed_batch_size: int = field(default=64, metadata=at("embedder", "batch_size"))
    chunking: ChunkSettings = field(default_factory=ChunkSettings, metadata=table(
        "ingest", size="chunk_chars", overlap="overlap_chars", min_chars="min_chunk_chars"))
    generator: str = field(default="extractive", metadata=at("generator", "kind"))
    # core's sections are tables of their own name; the extractive generator's live in [generator]
    core: CoreSettings = field(default_factory=CoreSettings, metadata=flattened(extractive="generator"))
    openai: OpenAISettings = field(default_factory=OpenAISettings)
    telegram: TelegramSettings = field(default_factory=TelegramSettings)
    slack: SlackSettings = field(default_factory=SlackSettings)
    serve: ServeSettings = field(default_factory=ServeSettings)
    index_storage: IndexStorageSettings = field(default_factory=IndexStorageSettings)
    log: LogSettings = field(default_factory=LogSettings)
    search_index: SearchIndexSettings = field(default_factory=SearchIndexSettings)
    admins: dict[str, UserIds] = field(default_factory=_default_admins, metadata=at("admins", "*"))
    # knowledge scopes ([[scopes]], bot/scopes.py): which documents answer which chats; none = one KB
    scopes: tuple[ScopeSettings, ...] = field(default=(), metadata=without_file())
    scoping: ScopingSettings = field(default_factory=ScopingSettings)
    # synced sources ([[sources]], bot/source_settings.py): websites, Git repositories and wikis kept in the index
    sources: tuple[SourceSpec, ...] = field(default=(), metadata=without_file())
    # similarity thresholds config.toml sets explicitly; they override the embedder's profile
    threshold_overrides: dict[str, dict[str, float]] = field(default_factory=dict, metadata=without_file())
    secrets: dict[str, str] = field(default_factory=dict, repr=False, metadata=without_file())
    source_path: str = field(default="", metadata=without_file())

    @property
    def db_url(self) -> str:
        """The URL in the variable `database_url_env` names, else `database_url`, else SQLite in data_dir."""
        return (self.secret(self.database_url_env) or self.database_url
                or f"sqlite:///{(self.data_dir / 'transcripts.db').as_posix()}")

    @property
    def index_path(self) -> Path:
        return self.data_dir / "index"

    @property
    def index_location(self) -> str:
        """Where the chunk index lives: `storage.index_uri` (e.g. s3://bucket/prefix), else data_dir/index."""
        return self.index_uri or str(self.index_path)

    def index_storage_options(self) -> dict[str, str]:
        """LanceDB storage_options for an object-store index (empty for a local one)."""
        s = self.index_storage
        if "://" not in self.index_uri:
            return {}
        options = {"aws_endpoint": s.endpoint, "aws_region": s.region,
                   "aws_access_key_id": self.secret(s.access_key_id_env),
                   "aws_secret_access_key": self.secret(s.secret_access_key_env)}
        if s.allow_http:
            options["allow_http"] = "true"
        return {k: v for k, v in options.items() if v}

    @property
    def spool_path(self) -> Path:
        """Turns the transcript database could not take wait here (see storage/records/spool.py)."""
        return self.data_dir / "spool" / "turns.jsonl"

    def secret(self, env_name: str) -> str:
        """The secret named by an `*_env` setting, as read from the environment at load time."""
        return self.secrets.get(env_name, "")

    def is_admin(self, platform: str, user_id: str) -> bool:
        return str(user_id) in self.admins.get(platform, ())

    def scope_map(self) -> ScopeMap:
        """The knowledge scopes, with the folder of each scope's saved FAQ answers."""
        return ScopeMap.of(self.scopes, self.scoping.default_scope, self.data_dir / "reviewed")

    def env_names(self) -> list[str]:
        """Every environment variable an `*_env` setting names, wherever in the schema it is
        declared (the secrets to read, and to redact from logs)."""
        names = []
        for setting in layout(Config).values():
            if setting.key.endswith("_env"):
                value: Any = self
                for attr in setting.path:
                    value = getattr(value, attr)
                names.append(str(value))
        names.extend(name for s in self.sources for name in (s.token_env, s.user_env))
        for scope in self.scopes:  # each scope's own tokens (bot/server/scope_access.py)
            names += [scope.api_token_env, scope.review_token_env]
        return [n for n in dict.fromkeys(names) if n]


ENV_PREFIX = "GROUNDBOT_"


def from_toml(data: Mapping[str, Any], source: str = "config.toml") -> Config:
    """Config from a parsed config.toml (missing keys keep their defaults); errors name `source`.
    `[[scopes]]` and `[[sources]]` are arrays of tables, read and checked apart (bot/scopes.py,
    bot/source_settings.py)."""
    data = dict(data)
    scopes = parse_scopes(data.pop("scopes"), source) if "scopes" in data else ()
    sources = parse_sources(data.pop("sources"), source) if "sources" in data else ()
    cfg, explicit = load_toml(Config, data, source)
    check_scopes(scopes, cfg.scoping.default_scope, cfg.kb_paths, source, fed={n for s in sources for n in s.scopes})
    check_sources(sources, [s.name for s in scopes], source)
    _check_serve_scopes(cfg.serve, scopes, source)
    overrides: dict[str, dict[str, float]] = {}
    for path, value in explicit.items():  # ("core", section, key): a threshold set in the file
        if path[0] == "core" and path[2] in THRESHOLD_KEYS.get(path[1], ()):
            overrides.setdefault(path[1], {})[path[2]] = value
    return replace(cfg, threshold_overrides=overrides, scopes=scopes, sources=sources)


def _check_serve_scopes(serve: ServeSettings, scopes: tuple[ScopeSettings, ...], source: str) -> None:
    """`[serve] open_api_scope` names a scope, and no scope's token variable is a global one
    (a scope's token would then open every scope)."""
    names = [s.name for s in scopes]
    if serve.open_api_scope and serve.open_api_scope not in names:
        raise ValueError(f"{source}: [serve] open_api_scope = {serve.open_api_scope!r} is not a scope; "
                         f"known scopes: {', '.join(names) or '(none: without [[scopes]] leave it empty)'}")
    for s in scopes:
        for env in (s.api_token_env, s.review_token_env):
            if env and env in (serve.api_token_env, serve.review_token_env):
                raise ValueError(f"{source}: scope {s.name!r}: {env!r} is a [serve] token variable, which opens "
                                 "every scope; give the scope's token a variable of its own")


def load_config(path: str | Path | None = None, *, data_dir: str | Path | None = None,
                environ: dict[str, str] | None = None) -> Config:
    """Load config.toml (explicit path, else ./config.toml if present, else defaults), with the
    `GROUNDBOT_<TABLE>__<KEY>` environment variables over it."""
    import tomllib

    env = dict(os.environ) if environ is None else environ
    chosen: Path | None = Path(path) if path else (Path("config.toml") if Path("config.toml").is_file() else None)
    data: dict[str, Any] = {}
    if chosen is not None:
        if not chosen.is_file():
            raise FileNotFoundError(f"config file not found: {chosen}")
        with chosen.open("rb") as fh:
            try:
                data = tomllib.load(fh)
            except tomllib.TOMLDecodeError as exc:
                raise ValueError(f"{chosen}: not valid TOML: {exc}") from exc
    overrides = environment_tables(Config, env, ENV_PREFIX)
    for name, body in overrides.items():  # a key set in the environment wins over the file's
        data[name] = {**data.get(name, {}), **body} if isinstance(data.get(name, {}), dict) else body
    source = str(chosen or "defaults") + (f" with {ENV_PREFIX}*__* environment overrides" if overrides else "")
    cfg = from_toml(data, source) if data else Config()
    if data_dir is not None:
        cfg = replace(cfg, data_dir=Path(data_dir))
    secrets = {name: env[name] for name in cfg.env_names() if env.get(name)}
    return replace(cfg, secrets=secrets, source_path=str(chosen or ""))
