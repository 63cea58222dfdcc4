"""`[[sources]]` in config.toml: each mistake stops groundbot with the entry and the key named."""

from __future__ import annotations

from typing import Any

import pytest

from bot.config import from_toml
from bot.source_settings import SourceError, parse_interval, parse_sources


def web(**extra: Any) -> dict[str, Any]:
    return {"name": "site", "kind": "web", "url": "https://docs.example.com/sitemap.xml", **extra}


def test_a_source_is_read_with_its_interval_and_lists() -> None:
    [spec] = parse_sources([web(interval="6h", include=["/guide/*"], scopes=[])])
    assert (spec.interval, spec.include, spec.allow_private_addresses) == (21600.0, ("/guide/*",), False)
    assert spec.doc_prefix == "site:" and spec.source_prefix == "sync:site:"


@pytest.mark.parametrize(("entry", "message"), [
    (web(intervall="6h"), "unknown key 'intervall'; did you mean interval?"),
    (web(kind="ftp"), "kind must be one of web, git, confluence, notion"),
    (web(url=""), "url is required"),
    (web(name="a b"), "name must be"),
    (web(interval="soon"), "interval: expected"),
    (web(interval="10s"), "at least 60 seconds"),
    (web(max_pages="many"), "max_pages"),
])
def test_a_wrong_entry_names_itself_and_the_key(entry: dict[str, Any], message: str) -> None:
    with pytest.raises(SourceError, match=message.replace("(", r"\(").replace("?", r"\?")):
        parse_sources([entry])


def test_checks_across_entries_and_scopes() -> None:
    def load(sources: list[dict[str, Any]], scopes: list[dict[str, Any]] | None = None) -> Any:
        data: dict[str, Any] = {"sources": sources}
        if scopes is not None:
            data["scopes"] = scopes
        return from_toml(data, "config.toml")

    with pytest.raises(SourceError, match="defined twice"):
        load([web(), web()])
    with pytest.raises(SourceError, match="scope 'hr' is not a"):
        load([web(scopes=["hr"])])
    with pytest.raises(SourceError, match="never the secret itself"):
        load([web(kind="confluence", url="https://wiki.example.com", token_env="s3cr3t-token-value")])
    with pytest.raises(SourceError, match="needs token_env"):
        load([web(kind="notion", url="https://api.notion.com")])
    with pytest.raises(SourceError, match="name the scopes it feeds"):
        load([web()], [{"name": "public", "paths": ["docs"]}])
    # a scope fed only by a source needs no paths of its own
    cfg = load([web(scopes=["public"])], [{"name": "public", "chats": ["console"]}])
    assert cfg.sources[0].scopes == ("public",) and cfg.scopes[0].paths == ()


def test_a_source_token_variable_is_read_as_a_secret() -> None:
    cfg = from_toml({"sources": [web(kind="git", url="https://git.example.com/h.git", token_env="GROUNDBOT_GIT_TOKEN")]},
                    "config.toml")
    assert "GROUNDBOT_GIT_TOKEN" in cfg.env_names()


def test_intervals() -> None:
    assert [parse_interval(v, "x") for v in ("", 0, "90s", "30m", "1.5h", "1d", 120)] == [
        0.0, 0.0, 90.0, 1800.0, 5400.0, 86400.0, 120.0]
