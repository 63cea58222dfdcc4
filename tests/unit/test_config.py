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
