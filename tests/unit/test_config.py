"""config.toml documents every setting and its values equal the built-in defaults."""

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
