"""Scopes as an access boundary over HTTP, piece by piece: the token variables of `[[scopes]]`,
the start-up refusal of an API that would answer every scope, bearer tokens matched in constant
time, the scope a caller may ask in, conversation keys per holder, and refusals recorded with
their holder, never their token (the whole through a real `groundbot serve`:
tests/scenario/test_scopes_http.py)."""

from __future__ import annotations

import io
import logging
import re
from pathlib import Path

import pytest

from bot.config import Config, load_config
from bot.server.metrics import Metrics
from bot.server.scope_access import AccessConfigError, ApiAccess, Caller, Refusals, Refused, matching, review_tokens
from core.messages import NOT_SET_UP
from storage.records.access_refusals import AccessLog
from storage.records.database import make_engine, migrate

HEAD = '[paths]\nkb_paths = ["kb"]\n\n'
HR = '[[scopes]]\nname = "hr"\npaths = ["kb/hr"]\nchats = ["slack:C0HR"]\napi_token_env = "HR_API"\n'
ENG = '[[scopes]]\nname = "eng"\npaths = ["kb/eng"]\nchats = ["slack:C0ENG"]\napi_token_env = "ENG_API"\n'
HR_TOKEN, ENG_TOKEN, GLOBAL_TOKEN = "hr-token-0123456789", "eng-token-9876543210", "global-token-abcdef"


def load(tmp_path: Path, text: str, environ: dict[str, str] | None = None) -> Config:
    path = tmp_path / "c.toml"
    path.write_text(text, encoding="utf-8")
    return load_config(path, environ=environ or {})


@pytest.fixture
def scoped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ApiAccess:
    monkeypatch.chdir(tmp_path)
    cfg = load(tmp_path, HEAD + HR + ENG, {"HR_API": HR_TOKEN, "ENG_API": ENG_TOKEN, "GROUNDBOT_API_TOKEN": GLOBAL_TOKEN})
    return ApiAccess.of(cfg)


def test_a_scope_names_its_token_variables_and_they_are_secrets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    cfg = load(tmp_path, HEAD + HR + 'review_token_env = "HR_REVIEW"\n', {"HR_API": "a", "HR_REVIEW": "b"})
    assert (cfg.scopes[0].api_token_env, cfg.scopes[0].review_token_env) == ("HR_API", "HR_REVIEW")
    assert {"HR_API", "HR_REVIEW"} <= set(cfg.env_names())  # read, and redacted from every log line
    assert cfg.secret("HR_API") == "a" and review_tokens(cfg) == {"hr": "b"}


@pytest.mark.parametrize(("text", "expected"), [
    (HEAD + HR.replace('"HR_API"', '"hr api"'), "c.toml: [[scopes]] #1 ('hr'): api_token_env must name an environment"),
    (HEAD + HR + ENG.replace("ENG_API", "HR_API"),
     "c.toml: scope 'eng': api_token_env 'HR_API' is already the api_token_env of scope 'hr'"),
    (HEAD + HR.replace("HR_API", "GROUNDBOT_API_TOKEN"),
     "c.toml: scope 'hr': 'GROUNDBOT_API_TOKEN' is a [serve] token variable, which opens every scope"),
    (HEAD + '[serve]\nopen_api_scope = "public"\n\n' + HR,
     "c.toml: [serve] open_api_scope = 'public' is not a scope; known scopes: hr"),
    (HEAD + '[serve]\nopen_api_scope = "public"\n', "[serve] open_api_scope = 'public' is not a scope"),
])
def test_token_variable_mistakes_stop_the_start(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str,
                                                expected: str) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match=re.escape(expected)):
        load(tmp_path, text)


def test_scopes_without_any_api_token_refuse_to_start_unless_one_scope_is_open(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from bot.cli.main import main as cli_main

    monkeypatch.chdir(tmp_path)
    for name in ("GROUNDBOT_API_TOKEN", "HR_API", "ENG_API"):
        monkeypatch.delenv(name, raising=False)
    cfg = load(tmp_path, HEAD + HR + ENG)
    with pytest.raises(AccessConfigError, match="knowledge scopes are configured but /api/ask has no token"):
        ApiAccess.of(cfg)
    assert cli_main(["--config", str(tmp_path / "c.toml"), "serve"]) == 2  # before any model is loaded
    err = capsys.readouterr().err
    assert "set GROUNDBOT_API_TOKEN (every scope) or a scope's api_token_env variable" in err
    assert "[serve] open_api_scope" in err
    opened = ApiAccess.of(load(tmp_path, HEAD + '[serve]\nopen_api_scope = "eng"\n\n' + HR + ENG))
    assert opened.caller("", "") == Caller("open", "eng")
    assert opened.caller("Bearer anything", "") == Caller("open", "eng")  # no token configured to check it against
    both = ApiAccess.of(load(tmp_path, HEAD + '[serve]\nopen_api_scope = "eng"\n\n' + HR + ENG, {"HR_API": HR_TOKEN}))
    assert both.caller("", "") == Caller("open", "eng") and both.caller(f"Bearer {HR_TOKEN}", "").scope == "hr"  # type: ignore[union-attr]
    assert isinstance(both.caller("Bearer wrong", ""), Refused)  # a token sent must be a known one
    hr_only = ApiAccess.of(load(tmp_path, HEAD + HR + ENG, {"HR_API": HR_TOKEN}))  # ENG_API unset: eng closed
    assert hr_only.caller("", "") == Refused(401, "no_token", "missing bearer token")
    one_kb = ApiAccess.of(load(tmp_path, HEAD))  # no scopes, no token: open to the one knowledge base, as before
    assert one_kb.caller("", "") == Caller("open", None)


def test_two_holders_with_one_token_refuse_to_start_without_naming_it(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    cfg = load(tmp_path, HEAD + HR + ENG, {"HR_API": HR_TOKEN, "ENG_API": HR_TOKEN})
    with pytest.raises(AccessConfigError, match="scope:hr and scope:eng have the same token") as raised:
        ApiAccess.of(cfg)
    assert HR_TOKEN not in str(raised.value)


def test_the_bearer_token_names_its_holder(scoped: ApiAccess) -> None:
    assert scoped.caller(f"Bearer {HR_TOKEN}", "") == Caller("scope:hr", "hr", HR_TOKEN.encode())
    assert scoped.caller(f"bearer {ENG_TOKEN}", "").scope == "eng"  # type: ignore[union-attr]
    assert scoped.caller(f"Bearer {GLOBAL_TOKEN}", "") == Caller("global", None, GLOBAL_TOKEN.encode())
    for header in ("", f"Basic {HR_TOKEN}", f"Bearer {HR_TOKEN[:-1]}", f"Bearer {HR_TOKEN}x", "Bearer ", HR_TOKEN,
                   "Bearer \udcff"):
        refused = scoped.caller(header, "")
        assert isinstance(refused, Refused) and refused.status == 401 and refused.who == "none", header
    in_url = scoped.caller(f"Bearer {HR_TOKEN}", f"token={HR_TOKEN}")
    assert isinstance(in_url, Refused) and in_url.status == 400 and in_url.reason == "query_string"
    assert HR_TOKEN not in in_url.message
    assert matching("x", {"a": "x", "b": "y"}) == "a" and matching("", {"a": "x"}) is None


def test_a_scope_token_asks_in_its_scope_only_and_learns_nothing_of_the_others(scoped: ApiAccess) -> None:
    hr = scoped.caller(f"Bearer {HR_TOKEN}", "")
    assert isinstance(hr, Caller)
    assert scoped.scope_for(hr, None, "c") == "hr" and scoped.scope_for(hr, "hr", "c") == "hr"
    other = scoped.scope_for(hr, "eng", "c")
    unknown = scoped.scope_for(hr, "finance", "c")
    assert isinstance(other, Refused) and isinstance(unknown, Refused)
    assert (other.status, other.reason, other.who, other.scope) == (403, "scope_not_allowed", "scope:hr", "eng")
    assert (unknown.status, unknown.message, unknown.scope) == (403, other.message, "(unknown)")  # alike: no list
    assert "eng" not in other.message
    for odd in ("x" * 10_240, "hr\x00", "../hr", "h r", "hr\n", "", "ہر"):
        bad = scoped.scope_for(hr, odd, "c")
        assert isinstance(bad, Refused) and bad.status == 400 and bad.scope == "(unknown)", odd
        assert odd not in bad.message or not odd and len(bad.message) < 100
    every = scoped.caller(f"Bearer {GLOBAL_TOKEN}", "")
    assert isinstance(every, Caller) and scoped.scope_for(every, "eng", "c") == "eng"
    listed = scoped.scope_for(every, "finance", "c")
    assert isinstance(listed, Refused) and listed.message == "unknown scope 'finance' (scopes: hr, eng)"
    assert scoped.scope_for(every, None, "c") == NOT_SET_UP  # the "api" chat: no scope serves it, no default


def test_a_conversation_id_is_its_holders_and_its_scopes(scoped: ApiAccess) -> None:
    hr, every = Caller("scope:hr", "hr", HR_TOKEN.encode()), Caller("global", None, GLOBAL_TOKEN.encode())
    key = scoped.key(hr, "hr", "widget-1")
    assert key == scoped.key(hr, "hr", "widget-1") and (key.platform, key.chat_id) == ("api", "widget-1")
    others = {scoped.key(every, "hr", "widget-1"), scoped.key(every, "eng", "widget-1"),
              scoped.key(Caller("scope:hr", "hr", b"rotated"), "hr", "widget-1"),
              scoped.key(Caller("open", "hr"), "hr", "widget-1")}
    assert key not in others and len(others) == 4
    assert HR_TOKEN not in key.as_str() and len(key.thread_id) == 16


def test_a_refusal_is_counted_logged_and_kept_with_its_holder_never_its_token(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{(tmp_path / 'records.db').as_posix()}")
    migrate(engine)
    now = [100.0]
    access_log = AccessLog(engine, clock=lambda: now[0])
    metrics = Metrics()
    refusals = Refusals(metrics, lambda: access_log)
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    logging.getLogger("groundbot.access").addHandler(handler)
    try:
        for _ in range(3):  # a burst of one kind: one row, the rest counted in the next row's repeats
            refusals.record("api_ask", Refused(403, "scope_not_allowed", "m", "scope:eng", "hr"))
        refusals.record("api_ask", Refused(401, "no_token", "m"))
        now[0] += 1.5
        refusals.record("api_ask", Refused(403, "scope_not_allowed", "m", "scope:eng", "hr"))
    finally:
        logging.getLogger("groundbot.access").removeHandler(handler)
    rows = access_log.recent()
    assert [(r["who"], r["scope"], r["reason"], r["status"], r["repeats"]) for r in rows] == [
        ("scope:eng", "hr", "scope_not_allowed", 403, 2), ("none", "", "no_token", 401, 0),
        ("scope:eng", "hr", "scope_not_allowed", 403, 0)]
    assert all(r["at"] is not None and r["route"] == "api_ask" for r in rows)
    text = metrics.exposition().decode()
    assert ('groundbot_access_refused_total{reason="scope_not_allowed",route="api_ask",scope="hr",who="scope:eng"} 4.0'
            in text)
    assert stream.getvalue().count("access refused: api_ask 403 scope_not_allowed (who scope:eng, scope hr)") == 4
    engine.dispose()
    broken = Refusals(Metrics(), lambda: AccessLog(make_engine(f"sqlite:///{(tmp_path / 'none' / 'x.db').as_posix()}")))
    broken.record("review", Refused(403, "wrong_token", "m"))  # the database away: the refusal stands, no error


def test_the_scope_an_mcp_caller_reads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A scope's token reads its scope; the global token the scope that serves the chat "mcp", else
    the default scope, else none (NOT_SET_UP); without scopes, the whole knowledge base (None)."""
    monkeypatch.chdir(tmp_path)
    env = {"HR_API": HR_TOKEN, "ENG_API": ENG_TOKEN, "GROUNDBOT_API_TOKEN": GLOBAL_TOKEN}
    every = load(tmp_path, HEAD + HR + ENG, env)
    served = load(tmp_path, HEAD + HR + ENG.replace('chats = ["slack:C0ENG"]', 'chats = ["slack:C0ENG", "mcp"]'), env)
    default = load(tmp_path, HEAD + '[scoping]\ndefault_scope = "hr"\n\n' + HR + ENG, env)
    none = load(tmp_path, HEAD, {"GROUNDBOT_API_TOKEN": GLOBAL_TOKEN})
    for cfg, mcp_reads, api_reads in ((every, NOT_SET_UP, NOT_SET_UP), (served, "eng", NOT_SET_UP),
                                      (default, "hr", "hr"), (none, None, None)):
        access = ApiAccess.of(cfg)
        holder = access.caller(f"Bearer {GLOBAL_TOKEN}", "", "/mcp")
        assert isinstance(holder, Caller) and holder.who == "global"
        assert (access.own_scope(holder, "mcp"), access.own_scope(holder, "api")) == (mcp_reads, api_reads)
    access = ApiAccess.of(served)
    hr, every_scope = access.caller(f"Bearer {HR_TOKEN}", "", "/mcp"), access.caller(f"Bearer {GLOBAL_TOKEN}", "", "/mcp")
    assert isinstance(hr, Caller) and isinstance(every_scope, Caller)
    assert access.own_scope(hr, "mcp") == "hr"  # its token's, whatever scope serves "mcp"
    keys = {access.key(c, s, "same-id", platform="mcp") for c, s in ((hr, "hr"), (every_scope, "hr"), (every_scope, "eng"))}
    assert len(keys) == 3 and {k.platform for k in keys} == {"mcp"}  # another holder or scope: another conversation
    refused = ApiAccess.of(every).caller(f"Bearer {HR_TOKEN}", "token=x", "/mcp")
    assert isinstance(refused, Refused) and refused.message.startswith("/mcp takes no query parameters")
