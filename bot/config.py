"""Read configuration once: config.toml (optional) + environment secrets + CLI overrides.

This is the only module that reads os.environ. Defaults below mirror config.toml
(a test keeps them in step), so the bot also runs with no config file at all.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from core.profiles import THRESHOLD_KEYS
from core.settings import (
    CoreSettings,
    ExtractiveSettings,
    GateSettings,
    JudgeSettings,
    RefusalSettings,
    RetrievalSettings,
    VerifySettings,
)
from storage.ingest import ChunkSettings


@dataclass(frozen=True)
class OpenAISettings:
    base_url: str = "http://127.0.0.1:8000/v1"
    model: str = "gpt-4o-mini"
    api_key_env: str = "GROUNDBOT_OPENAI_API_KEY"
    timeout_s: float = 8.0
    max_retries: int = 1
    max_tokens: int = 400
    logprobs: bool = True


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


@dataclass(frozen=True)
class ServeSettings:
    """`groundbot serve`: one HTTP port for Slack, the Telegram webhook, /api/ask and operations."""

    host: str = "127.0.0.1"
    port: int = 8080
    workers: int = 1
    api_token_env: str = "GROUNDBOT_API_TOKEN"
    slack_path: str = "/slack/events"
    telegram_path: str = "/telegram"
    conversation_lease_s: float = 60.0


@dataclass(frozen=True)
class Config:
    data_dir: Path = Path(".groundbot")
    kb_paths: tuple[str, ...] = ("docs",)
    reingest_roots: tuple[str, ...] = ()
    database_url: str = ""
    lock_budget_s: float = 10.0
    embedder: str = "minilm"
    embed_batch_size: int = 64
    chunking: ChunkSettings = field(default_factory=ChunkSettings)
    generator: str = "extractive"
    core: CoreSettings = field(default_factory=CoreSettings)
    openai: OpenAISettings = field(default_factory=OpenAISettings)
    telegram: TelegramSettings = field(default_factory=TelegramSettings)
    slack: SlackSettings = field(default_factory=SlackSettings)
    serve: ServeSettings = field(default_factory=ServeSettings)
    admins: dict[str, tuple[str, ...]] = field(default_factory=lambda: {"console": ("local",), "telegram": (), "slack": ()})
    # similarity thresholds config.toml sets explicitly; they override the embedder's profile
    threshold_overrides: dict[str, dict[str, float]] = field(default_factory=dict)
    secrets: dict[str, str] = field(default_factory=dict, repr=False)
    source_path: str = ""

    @property
    def db_url(self) -> str:
        return self.database_url or f"sqlite:///{(self.data_dir / 'transcripts.db').as_posix()}"

    @property
    def index_path(self) -> Path:
        return self.data_dir / "index"

    @property
    def spool_path(self) -> Path:
        """Turns the transcript database could not take wait here (see storage/spool.py)."""
        return self.data_dir / "spool" / "turns.jsonl"

    def secret(self, env_name: str) -> str:
        """The secret named by an `*_env` setting, as read from the environment at load time."""
        return self.secrets.get(env_name, "")

    def is_admin(self, platform: str, user_id: str) -> bool:
        return str(user_id) in self.admins.get(platform, ())


def _section(cls: Any, raw: dict[str, Any], where: str) -> Any:
    """Build a settings dataclass from a TOML table, rejecting unknown keys loudly."""
    known = {f.name for f in fields(cls)}
    unknown = set(raw) - known
    if unknown:
        raise ValueError(f"unknown setting(s) in [{where}]: {', '.join(sorted(unknown))}")
    return cls(**raw)


def _env_names(cfg: Config) -> list[str]:
    return [cfg.openai.api_key_env, cfg.telegram.token_env, cfg.telegram.webhook_secret_env,
            cfg.slack.bot_token_env, cfg.slack.app_token_env, cfg.slack.signing_secret_env, cfg.serve.api_token_env]


def from_toml(data: dict[str, Any]) -> Config:
    """Config from a parsed config.toml (missing keys keep their defaults)."""
    paths = data.get("paths", {})
    gen = dict(data.get("generator", {}))
    kind = gen.pop("kind", "extractive")
    extractive = _section(ExtractiveSettings, gen, "generator")
    refusal_raw = dict(data.get("refusal", {}))
    base_refusal = RefusalSettings()
    messages = {**base_refusal.messages, **refusal_raw.pop("messages", {})}
    review = {**base_refusal.review_messages, **refusal_raw.pop("review_messages", {})}
    refusal = _section(RefusalSettings, {**refusal_raw, "messages": messages, "review_messages": review}, "refusal")
    ingest = data.get("ingest", {})
    chunking = ChunkSettings(
        size=int(ingest.get("chunk_chars", 900)), overlap=int(ingest.get("overlap_chars", 150)),
        min_chars=int(ingest.get("min_chunk_chars", 20)), embed_batch=int(ingest.get("embed_batch", 256)),
    )
    core = CoreSettings(
        retrieval=_section(RetrievalSettings, data.get("retrieval", {}), "retrieval"),
        gates=_section(GateSettings, data.get("gates", {}), "gates"),
        extractive=extractive,
        judge=_section(JudgeSettings, data.get("judge", {}), "judge"),
        verify=_section(VerifySettings, data.get("verify", {}), "verify"),
        refusal=refusal,
    )
    admins = {k: tuple(str(u) for u in v) for k, v in data.get("admins", {}).items()}
    toml_section = {"gates": "gates", "extractive": "generator", "refusal": "refusal"}
    overrides = {section: {k: float(data[toml_section[section]][k]) for k in keys
                           if k in data.get(toml_section[section], {})}
                 for section, keys in THRESHOLD_KEYS.items()}
    emb = data.get("embedder", {})
    return Config(
        data_dir=Path(paths.get("data_dir", ".groundbot")),
        kb_paths=tuple(paths.get("kb_paths", ["docs"])),
        reingest_roots=tuple(str(r) for r in paths.get("reingest_roots", [])),
        database_url=data.get("storage", {}).get("database_url", ""),
        lock_budget_s=float(data.get("storage", {}).get("lock_budget_s", 10.0)),
        embedder=emb.get("name", "minilm"),
        embed_batch_size=int(emb.get("batch_size", 64)),
        chunking=chunking,
        generator=kind,
        core=core,
        openai=_section(OpenAISettings, data.get("openai", {}), "openai"),
        telegram=_section(TelegramSettings, data.get("telegram", {}), "telegram"),
        slack=_section(SlackSettings, data.get("slack", {}), "slack"),
        serve=_section(ServeSettings, data.get("serve", {}), "serve"),
        admins={"console": ("local",), "telegram": (), "slack": (), **admins},
        threshold_overrides={k: v for k, v in overrides.items() if v},
    )


def load_config(path: str | Path | None = None, *, data_dir: str | Path | None = None,
                environ: dict[str, str] | None = None) -> Config:
    """Load config.toml (explicit path, else ./config.toml if present, else defaults)."""
    env = dict(os.environ) if environ is None else environ
    env.setdefault("HF_HUB_OFFLINE", "1")
    chosen: Path | None = Path(path) if path else (Path("config.toml") if Path("config.toml").is_file() else None)
    if chosen is not None:
        if not chosen.is_file():
            raise FileNotFoundError(f"config file not found: {chosen}")
        with chosen.open("rb") as fh:
            cfg = from_toml(tomllib.load(fh))
    else:
        cfg = Config()
    if data_dir is not None:
        cfg = replace(cfg, data_dir=Path(data_dir))
    secrets = {name: env[name] for name in _env_names(cfg) if env.get(name)}
    # never let a library reach a model hub: weights come from installed packages
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    return replace(cfg, secrets=secrets, source_path=str(chosen or ""))


def use_prometheus_multiprocess(directory: str) -> None:
    """Point prometheus_client's multiprocess mode at `directory` for worker processes started
    after this call; the library reads this variable itself, so it is set here, once."""
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = directory
