"""Read configuration once: config.toml (optional), then `GROUNDBOT_<TABLE>__<KEY>` environment
variables over it, the secrets the `*_env` settings name, and the command line's overrides over both.

`Config` is the one schema, a pydantic-settings model: each of its fields is a table of
config.toml with the same name, each table a settings dataclass whose fields are its keys, with
their only defaults and their descriptions (the docstring under each field; docs/configuration.md's
reference of every key is generated from them by bot/config_reference.py). A new setting is one
field on a table's dataclass, in bot/settings.py or core/settings.py. `Config.read` reads one file
with pydantic-settings' TOML source and one environment with `Environment` (a settings source of
the library's public kind), lays the environment's keys over the file's and the overrides over
both, key by key, and validates the result; `Config()` alone is the built-in defaults. Only the
library's public names are used, so any release in pyproject.toml's range reads the same settings.
This is the only module that reads os.environ, and it never writes it.
"""

from __future__ import annotations

import dataclasses
import os
import tomllib
import types
import typing
from collections.abc import Mapping
from dataclasses import fields, replace
from pathlib import Path
from typing import Annotated, Any, ClassVar

from pydantic import (
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
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict, TomlConfigSettingsSource

from bot.config_errors import ConfigError, explain, unknown_table
from bot.scopes import ScopeMap, ScopeSettings, ScopingSettings, check_scopes, parse_scopes
from bot.settings import (
    EmbedderSettings,
    GeneratorSettings,
    IndexStorageSettings,
    LogSettings,
    OpenAISettings,
    PathSettings,
    ServeSettings,
    SlackSettings,
    StorageSettings,
    TelegramSettings,
)
from bot.source_settings import check_sources, parse_sources
from core.profiles import THRESHOLD_KEYS
from core.settings import (
    CoreSettings,
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
        `Config.read` reads one file and one environment."""
        return (init_settings,)

    @classmethod
    def read(cls, file: Path | None = None, environ: Mapping[str, str] | None = None,
             overrides: Mapping[str, Mapping[str, Any]] | None = None) -> Config:
        """The settings of config.toml `file` (None: the built-in defaults) with the
        `GROUNDBOT_<TABLE>__<KEY>` variables of `environ` over it and `overrides` (table -> key ->
        value, the command line's) over both; the secrets its `*_env` settings name, read from
        `environ` too. The first mistake is a ConfigError naming the file or the variable."""
        env = dict(environ or {})
        for name in sorted(env):  # a variable naming no table would otherwise be ignored unseen
            if name.upper().startswith(ENV_PREFIX) and "__" in name:
                table = name[len(ENV_PREFIX):].lower().partition("__")[0]
                if table not in cls.TABLES:
                    raise unknown_table(table, cls.TABLES, f"environment variable {name}")
        try:
            from_file = TomlConfigSettingsSource(cls, toml_file=file)() if file is not None else {}
        except tomllib.TOMLDecodeError as exc:
            raise ValueError(f"{file}: not valid TOML: {exc}") from exc
        from_environment = Environment(cls, env)()
        name = str(file or "defaults") + (f" with {ENV_PREFIX}*__* environment overrides" if from_environment else "")
        cfg = cls.validated(name, _over(_over(from_file, from_environment), overrides or {}), from_environment)
        cfg = cfg.with_secrets({n: env[n] for n in cfg.env_names() if env.get(n)})
        cfg._source_path = str(file or "")
        return cfg

    @classmethod
    def validated(cls, name: str, data: Mapping[str, Any], from_environment: Mapping[str, Any] | None = None) -> Config:
        """The settings `data` gives (table -> key -> value), checked; a mistake is said for an
        operator (bot/config_errors.py), naming `name` or the variable that set the value."""
        for table in data:  # pydantic passes over a name with a leading underscore unseen
            if table not in cls.TABLES:
                raise unknown_table(table, cls.TABLES, name)
        try:
            return cls.model_validate(data)
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


class Environment(PydanticBaseSettingsSource):
    """The `GROUNDBOT_<TABLE>__<KEY>` variables of one mapping (the process's, or a test's) as
    tables, their names read whatever their case; `GROUNDBOT_<TABLE>` alone holds a whole table.
    A list or a table is read as a TOML value, as config.toml writes it (`[123, 456]`,
    `['a', 'b']`); a value that is not one, and every other value, is left as text for the
    validator to read or refuse.

    Why not the library's EnvSettingsSource: it reads os.environ only, and it finds the keys of
    pydantic models, not those of groundbot's dataclass tables."""

    def __init__(self, settings_cls: type[BaseSettings], environ: Mapping[str, str]) -> None:
        super().__init__(settings_cls)
        # the schema's own prefix and delimiter (its model_config), names compared in lower case
        self.prefix = str(self.config.get("env_prefix") or "").lower()
        self.delimiter = str(self.config.get("env_nested_delimiter") or "__")
        self.variables = {name.lower(): value for name, value in environ.items() if name.lower().startswith(self.prefix)}

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        """The table `field_name` as the variables set it: the whole table's variable first, each
        key's over it (a key of a key, as `GROUNDBOT_REFUSAL__MESSAGES__EN`, as deep as it goes)."""
        own = self.prefix + field_name.lower()
        whole: Any = None
        keys: dict[str, Any] = {}
        for name, text in sorted(self.variables.items(), key=lambda item: item[0].count(self.delimiter)):  # deeper over
            if name == own:
                whole = _read_value(field.annotation, text)
            elif name.startswith(own + self.delimiter):
                path = name[len(own) + len(self.delimiter):].split(self.delimiter)
                _put(keys, path, _read_value(_key_type(field.annotation, path), text))
        value = _over(whole, keys) if isinstance(whole, dict) else whole if whole is not None else keys or None
        return value, field_name, isinstance(value, dict)

    def __call__(self) -> dict[str, Any]:
        found = ((name, self.get_field_value(field, name)[0]) for name, field in self.settings_cls.model_fields.items())
        return {name: value for name, value in found if value is not None}


def _bare(hint: Any) -> Any:
    """`hint` without Annotated's extras and without None (an optional setting's type)."""
    while typing.get_origin(hint) is Annotated:
        hint = typing.get_args(hint)[0]
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        return _bare(args[0]) if len(args) == 1 else hint
    return hint


def _key_type(hint: Any, path: list[str]) -> Any:
    """The type of the key `path` names inside a table of type `hint` (None: no such key)."""
    for key in path:
        hint = _bare(hint)
        if typing.get_origin(hint) is dict:  # a table of free keys: every key has the values' type
            hint = typing.get_args(hint)[1]
        elif isinstance(hint, type) and dataclasses.is_dataclass(hint):
            hint = typing.get_type_hints(hint, include_extras=True).get(key)
        else:
            return None
    return hint


def _read_value(hint: Any, text: str) -> Any:
    """A variable's text as the value of a setting of type `hint`: a list or a table as a TOML
    value, else the text as it is (pydantic reads numbers and true/false from text)."""
    hint = _bare(hint)
    args = typing.get_args(hint) if typing.get_origin(hint) in (typing.Union, types.UnionType) else (hint,)
    if not any(typing.get_origin(a) in (list, tuple, set, frozenset, dict) or dataclasses.is_dataclass(a)
               for a in map(_bare, args)):
        return text
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def _put(tables: dict[str, Any], path: list[str], value: Any) -> None:
    """Set `value` at `path` in nested tables, making the tables on the way."""
    for key in path[:-1]:
        tables = tables.setdefault(key, {})
        if not isinstance(tables, dict):  # a key holding text cannot take another key
            return
    tables[path[-1]] = value


def _over(base: Mapping[str, Any], top: Mapping[str, Any]) -> dict[str, Any]:
    """`base` with `top` laid over it key by key: a table in both is merged, anything else replaced."""
    merged = dict(base)
    for key, value in top.items():
        below = merged.get(key)
        merged[key] = _over(below, value) if isinstance(value, Mapping) and isinstance(below, Mapping) else value
    return merged


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
    return Config.validated(source, data)


def load_config(path: str | Path | None = None, *, data_dir: str | Path | None = None,
                environ: Mapping[str, str] | None = None) -> Config:
    """Load config.toml (explicit path, else ./config.toml if present, else defaults), with the
    `GROUNDBOT_<TABLE>__<KEY>` environment variables over it (the process's, unless `environ`)."""
    chosen: Path | None = Path(path) if path else (Path("config.toml") if Path("config.toml").is_file() else None)
    if chosen is not None and not chosen.is_file():
        raise FileNotFoundError(f"config file not found: {chosen}")
    overrides = {"paths": {"data_dir": Path(data_dir)}} if data_dir is not None else {}
    return Config.read(chosen, os.environ if environ is None else environ, overrides)
