"""Knowledge scopes as an access boundary over HTTP, tried as an outsider would: a real `groundbot
serve` subprocess on 127.0.0.1 over HR's and engineering's scopes, each with its own /api/ask token
and /review sign-in, plus the global ones. Every hostile request is refused, and nothing of the
other scope appears in the answer, its sources, its suggestions or the review page; each refusal
is in the records database, /metrics and the JSON log, and no token is in the log.

Every answer is held for review here (hold_risk 0), so both scopes have items in the queue."""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from bot.app import build_app
from bot.config import load_config
from bot.server.review_page import COOKIE
from tests.ports import free_port
from tests.processes import serve_subprocess, wait_ready
from tests.scenario.scoped_kb import ENG_QUESTION, HR_QUESTION, HR_WORDS, write_kb
from tests.waits import WAIT_S

pytestmark = pytest.mark.processes  # starts groundbot serve as an operator does

START_S = max(WAIT_S, 300.0)
TOKENS = {"GROUNDBOT_API_TOKEN": "global-api-3f9c1e", "HR_API_TOKEN": "hr-widget-8d2a6b",
          "ENG_API_TOKEN": "eng-widget-51c7e0", "GROUNDBOT_REVIEW_TOKEN": "global-review-a07b44",
          "HR_REVIEW_TOKEN": "hr-review-6e1f93", "ENG_REVIEW_TOKEN": "eng-review-c24d58"}
GLOBAL, HR, ENG = TOKENS["GROUNDBOT_API_TOKEN"], TOKENS["HR_API_TOKEN"], TOKENS["ENG_API_TOKEN"]
# words only HR's documents hold, and only engineering's
HR_MARKS = ("parental", "leave", "sixteen", "annual", "hr portal", "adoption")
ENG_MARKS = ("roll back", "rollback", "deploy", "runbook", "database password", "incident")
FOLLOW_UP = "And can it be taken in several blocks?"


def _config(root: Path, kb: Path) -> str:
    scope = ('[[scopes]]\nname = "{n}"\npaths = ["{kb}/{n}", "{kb}/shared"]\nchats = ["slack:C0{N}"]\n'
             'api_token_env = "{N}_API_TOKEN"\nreview_token_env = "{N}_REVIEW_TOKEN"\n')
    return (f'[paths]\ndata_dir = "{(root / "data").as_posix()}"\nkb_paths = ["{kb.as_posix()}"]\n'
            f'[storage]\ndatabase_url = "sqlite:///{(root / "records.db").as_posix()}"\n'
            '[review]\ntemplate_risk = 0.0\nhold_risk = 0.0\n[log]\nformat = "json"\nlevel = "info"\n\n'
            + "".join(scope.format(n=n, N=n.upper(), kb=kb.as_posix()) for n in ("hr", "eng")))


@dataclass
class Served:
    url: str
    db: Path
    log: Path

    def ask(self, token: str | None, question: str, **body: Any) -> httpx.Response:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.post(self.url + "/api/ask", json={"question": question, **body}, headers=headers, timeout=WAIT_S)

    def rows(self, sql: str) -> list[tuple[Any, ...]]:
        with sqlite3.connect(self.db) as conn:
            return conn.execute(sql).fetchall()

    def turns(self) -> int:
        return int(self.rows("SELECT count(*) FROM turn")[0][0])


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> Iterator[Served]:
    root = tmp_path_factory.mktemp("scopes-http")
    kb = write_kb(root)
    cfg_path = root / "config.toml"
    cfg_path.write_text(_config(root, kb), encoding="utf-8")
    app = build_app(load_config(cfg_path, environ={}), embedder=embedder)
    assert len(app.ingest().added) == 3
    app.store.engine.dispose()
    del app
    port, log = free_port(), root / "serve.log"
    with serve_subprocess(cfg_path, port, 1, {**os.environ, **TOKENS}, log) as proc:
        url = f"http://127.0.0.1:{port}"
        wait_ready(url, proc, log, START_S)
        yield Served(url, root / "records.db", log)
    assert proc.returncode in (0, -signal.SIGTERM)  # uvicorn passes the SIGTERM on once it has stopped
    text = log.read_text()
    assert not [name for name, token in TOKENS.items() if token in text]  # no token in any log line


def _has(response: httpx.Response, marks: tuple[str, ...]) -> list[str]:
    text = response.text.lower()
    return [m for m in marks if m in text]


def test_each_scope_token_reads_its_own_scope(served: Served) -> None:
    hr = served.ask(HR, HR_QUESTION, conversation="own-hr")
    assert hr.status_code == 200 and hr.json()["scope"] == "hr" and HR_WORDS in hr.json()["draft"]
    eng = served.ask(ENG, ENG_QUESTION, conversation="own-eng")
    assert eng.status_code == 200 and eng.json()["scope"] == "eng" and "rollback" in eng.json()["draft"]
    assert not _has(eng, HR_MARKS) and not _has(hr, ENG_MARKS)
    assert served.ask(GLOBAL, HR_QUESTION, scope="hr").json()["scope"] == "hr"  # the global token: every scope


def test_a_token_naming_another_scope_is_refused_and_nothing_is_searched(served: Served) -> None:
    before = served.turns()
    for token, question, scope in ((ENG, HR_QUESTION, "hr"), (HR, ENG_QUESTION, "eng"), (ENG, HR_QUESTION, "HR"),
                                   (ENG, HR_QUESTION, "finance")):
        r = served.ask(token, question, scope=scope, conversation="probe")
        assert r.status_code == 403 and list(r.json()) == ["error"], (scope, r.text)
        assert r.json()["error"] == f"this token asks in scope {'eng' if token == ENG else 'hr'!r} only"
    assert served.turns() == before  # refused before anything was read or recorded


def test_no_token_a_wrong_one_or_one_in_the_url_is_refused(served: Served) -> None:
    before = served.turns()
    url = served.url + "/api/ask"
    body = {"question": HR_QUESTION, "scope": "hr"}
    for headers in ({}, {"Authorization": "Bearer not-a-token"}, {"Authorization": f"Basic {HR}"},
                    {"Authorization": f"Bearer {HR[:-1]}"}, {"Authorization": HR}):
        r = httpx.post(url, json=body, headers=headers, timeout=WAIT_S)
        assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer", headers
        assert r.json() == {"error": "missing bearer token" if not headers else "missing or wrong bearer token"}
    for query in ({"token": HR}, {"access_token": GLOBAL}, {"v": "1"}):
        for headers in ({}, {"Authorization": f"Bearer {HR}"}):
            r = httpx.post(url, params=query, json=body, headers=headers, timeout=WAIT_S)
            assert r.status_code == 400 and "never in the URL" in r.json()["error"] and HR not in r.text
    assert served.turns() == before


def test_an_odd_or_10_kb_scope_name_is_refused_without_being_echoed(served: Served) -> None:
    before = served.turns()
    for token in (HR, GLOBAL):
        for scope in ("x" * 10_240, "hr\n", "hr\x00", "../hr", "hr' OR '1'='1", "h r", "", "<script>hr</script>"):
            r = served.ask(token, HR_QUESTION, scope=scope)
            assert r.status_code == 400 and list(r.json()) == ["error"] and len(r.content) < 200, (token, scope)
            assert "letters, digits" in r.json()["error"] and not _has(r, HR_MARKS)
        for scope in (["hr"], {"hr": 1}, 7):
            r = served.ask(token, HR_QUESTION, scope=scope)
            assert r.status_code == 400 and r.json() == {"error": "'scope' must be a string"}
    unknown = served.ask(GLOBAL, HR_QUESTION, scope="finance")  # the global token may know the scopes
    assert unknown.status_code == 400 and unknown.json()["error"] == "unknown scope 'finance' (scopes: hr, eng)"
    assert served.turns() == before


def test_a_follow_up_in_a_conversation_started_in_another_scope_reveals_nothing(served: Served) -> None:
    started = served.ask(HR, HR_QUESTION, conversation="shared-id")
    assert started.status_code == 200 and HR_WORDS in started.json()["draft"]
    # engineering's widget names HR's conversation id: a fresh conversation in engineering's scope
    hijack = served.ask(ENG, FOLLOW_UP, conversation="shared-id")
    # and the global token, the same id in another scope than the one it started in
    served.ask(GLOBAL, HR_QUESTION, conversation="global-id", scope="hr")
    crossed = served.ask(GLOBAL, FOLLOW_UP, conversation="global-id", scope="eng")
    for r in (hijack, crossed):
        d = r.json()
        assert r.status_code == 200 and d["scope"] == "eng" and d["history"] == "none", d
        assert d["retrieval_query"] == FOLLOW_UP and not d["resolution"].get("previous")
        assert not _has(r, HR_MARKS), _has(r, HR_MARKS)  # answer, draft, sources, suggestions, query: none of HR's
        assert all("leave.md" not in json.dumps(s) for s in d["sources"] + d["suggestions"])
    again = served.ask(HR, FOLLOW_UP, conversation="shared-id")  # HR's own follow-up still has its history
    assert again.json()["history"] == "loaded" and again.json()["scope"] == "hr"


@contextmanager
def _sign_in(served: Served, token: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=served.url, timeout=WAIT_S) as web:
        assert web.post("/review/login", data={"token": token}).status_code == 303
        yield web


def _items(page: str) -> list[str]:
    return re.findall(r'name="item" value="(\d+)"', page)


def test_a_scope_review_sign_in_sees_and_decides_its_own_items_only(served: Served) -> None:
    served.ask(HR, HR_QUESTION, conversation="review-hr")
    served.ask(ENG, ENG_QUESTION, conversation="review-eng")
    scope_of = dict(served.rows("SELECT review_item.id, turn.scope FROM review_item JOIN turn "
                                "ON turn.id = review_item.turn_id WHERE review_item.status = 'open'"))
    eng_item = str(max(i for i, s in scope_of.items() if s == "eng"))
    with _sign_in(served, TOKENS["GROUNDBOT_REVIEW_TOKEN"]) as every:
        assert {"hr", "eng"} <= {scope_of[int(i)] for i in _items(every.get("/review").text)}
    with _sign_in(served, TOKENS["HR_REVIEW_TOKEN"]) as hr:
        page = hr.get("/review")
        assert page.status_code == 200 and "Signed in for scope hr" in page.text
        assert _items(page.text) and {scope_of[int(i)] for i in _items(page.text)} == {"hr"}
        assert ENG_QUESTION not in page.text and not _has(page, ENG_MARKS)
        csrf = re.search(r'name="csrf" value="(\w+)"', page.text).group(1)  # type: ignore[union-attr]
        for item in (eng_item, "999999", "²", "1" * 40):
            refused = hr.post("/review/act", data={"item": item, "action": "approve", "csrf": csrf})
            assert refused.status_code == 403 and "No such item in the queue of your scope" in refused.text, item
            assert ENG_QUESTION not in refused.text and not _has(refused, ENG_MARKS)
        assert served.rows(f"SELECT status FROM review_item WHERE id = {eng_item}") == [("open",)]
        own = _items(page.text)[0]
        done = hr.post("/review/act", data={"item": own, "action": "approve", "csrf": csrf})
        assert done.status_code == 303
        assert served.rows(f"SELECT status, reviewer FROM review_item WHERE id = {own}") == [("approved", "web:admin:hr")]
        forged = hr.cookies[COOKIE].replace("hr:", "eng:", 1)  # HR's session passed off as engineering's
    r = httpx.get(served.url + "/review", headers={"Cookie": f"{COOKIE}={forged}"}, timeout=WAIT_S)
    assert r.status_code == 401 and ENG_QUESTION not in r.text
    assert httpx.post(served.url + "/review/login", data={"token": HR}, timeout=WAIT_S).status_code == 403  # API ≠ review


def test_each_refusal_is_recorded_counted_and_logged_with_its_holder(served: Served) -> None:
    served.ask(ENG, HR_QUESTION, scope="hr")
    served.ask(None, HR_QUESTION)
    served.ask("wrong", HR_QUESTION)
    with _sign_in(served, TOKENS["ENG_REVIEW_TOKEN"]) as eng:
        csrf = re.search(r'name="csrf" value="(\w+)"', eng.get("/review").text).group(1)  # type: ignore[union-attr]
        hr_item = served.rows("SELECT review_item.id FROM review_item JOIN turn ON turn.id = review_item.turn_id "
                              "WHERE turn.scope = 'hr'")[0][0]
        assert eng.post("/review/act", data={"item": hr_item, "action": "reject", "csrf": csrf}).status_code == 403
    rows = set(served.rows("SELECT route, who, scope, reason, status FROM access_refusal"))
    assert {("api_ask", "scope:eng", "hr", "scope_not_allowed", 403), ("api_ask", "none", "", "no_token", 401),
            ("api_ask", "none", "", "wrong_token", 401), ("review", "scope:eng", "hr", "item_not_in_scope", 403),
            } <= rows
    assert all(r[0] for r in served.rows("SELECT at FROM access_refusal"))  # each with its time
    metrics = httpx.get(served.url + "/metrics", timeout=WAIT_S).text
    assert re.search(r'groundbot_access_refused_total\{reason="scope_not_allowed",route="api_ask",scope="hr",'
                     r'who="scope:eng"\} [1-9]', metrics)
    assert re.search(r'groundbot_access_refused_total\{reason="item_not_in_scope",route="review",scope="hr",'
                     r'who="scope:eng"\} [1-9]', metrics)
    lines = [json.loads(line) for line in served.log.read_text().splitlines() if line.startswith("{")]
    refused = [e for e in lines if e.get("logger") == "groundbot.access" and e.get("reason") == "scope_not_allowed"]
    assert refused and {(e["who"], e["scope"], e["route"]) for e in refused} >= {("scope:eng", "hr", "api_ask")}
