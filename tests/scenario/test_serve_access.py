"""Every HTTP route's door, tried against a real `groundbot serve` subprocess on 127.0.0.1 with
two knowledge scopes and their tokens, the global ones, a /metrics token, and Slack and Telegram
configured against their local stand-ins:

- docs/deploy.md's table of who may call each route is read from the doc and each of its cells
  asked (the right credential, none, a wrong one, another scope's or route's, and the right one
  from a client past the wrong-credential limit), so the doc and the server cannot drift apart;
- 30 wrong tokens in a row from one client get 429 before the 30th, while the right token from
  another client is answered, and no refused body holds anything of a scope;
- /metrics without its token is refused (401) and answered with it.

The server trusts 127.0.0.1 as its reverse proxy ([serve] trusted_proxies), so each test's
clients are told apart by the X-Forwarded-For the test sends, as a proxy would."""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import re
import signal
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from bot.app import build_app
from bot.config import load_config
from bot.server.http_app import build_asgi
from bot.server.review_page import COOKIE
from tests.ports import free_port
from tests.processes import serve_subprocess, wait_ready
from tests.scenario.scoped_kb import ENG_QUESTION, HR_QUESTION, HR_WORDS, write_kb
from tests.scenario.test_scopes_http import ENG_MARKS, HR_MARKS, START_S, _config
from tests.scenario.test_slack import sign
from tests.standins.slack import SlackStandIn
from tests.standins.telegram import TelegramStandIn
from tests.waits import WAIT_S

pytestmark = [pytest.mark.processes, pytest.mark.filterwarnings("ignore:.*retry_after.*:telegram.warnings.PTBDeprecationWarning")]

ROOT = Path(__file__).resolve().parents[2]
TOKENS = {"GROUNDBOT_API_TOKEN": "global-api-7d41c2", "HR_API_TOKEN": "hr-widget-30be9f",
          "ENG_API_TOKEN": "eng-widget-c8a1d5", "GROUNDBOT_REVIEW_TOKEN": "global-review-19e0aa",
          "HR_REVIEW_TOKEN": "hr-review-5b73f4", "ENG_REVIEW_TOKEN": "eng-review-e2d96c",
          "GROUNDBOT_METRICS_TOKEN": "metrics-scrape-4f08b1"}
HR, ENG, METRICS = TOKENS["HR_API_TOKEN"], TOKENS["ENG_API_TOKEN"], TOKENS["GROUNDBOT_METRICS_TOKEN"]
SLACK_SECRET, TG_SECRET = "slack-signing-61d0e3", "tg-webhook-secret-a93f"
KINDS = ("right", "none", "wrong", "other", "locked")  # the table's columns after "who may call it"
SCOPE_WORDS = re.compile(r"\b(hr|eng)\b", re.IGNORECASE)
_clients = itertools.count(1)


def new_client() -> str:
    """An address no test used yet (the server counts wrong credentials per client)."""
    n = next(_clients)
    return f"198.51.{100 + n // 250}.{n % 250 + 1}"


@contextmanager
def telegram_standin() -> Iterator[TelegramStandIn]:
    """The Telegram Bot API stand-in, on an event loop of its own thread for the whole module."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    standin = asyncio.run_coroutine_threadsafe(TelegramStandIn().start(), loop).result(WAIT_S)
    try:
        yield standin
    finally:
        asyncio.run_coroutine_threadsafe(standin.stop(), loop).result(WAIT_S)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(WAIT_S)
        loop.close()


@dataclass
class Served:
    url: str
    db: Path
    log: Path
    config: Path
    sessions: dict[str, str] = field(default_factory=dict)  # review sign-in -> its session cookie

    def post(self, path: str, client: str, **kwargs: Any) -> httpx.Response:
        headers = {"X-Forwarded-For": client, **kwargs.pop("headers", {})}
        return httpx.post(self.url + path, headers=headers, timeout=WAIT_S, **kwargs)

    def get(self, path: str, client: str, **kwargs: Any) -> httpx.Response:
        headers = {"X-Forwarded-For": client, **kwargs.pop("headers", {})}
        return httpx.get(self.url + path, headers=headers, timeout=WAIT_S, **kwargs)

    def ask(self, client: str, token: str | None, question: str = HR_QUESTION, **body: Any) -> httpx.Response:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return self.post("/api/ask", client, json={"question": question, **body}, headers=headers)

    def rows(self, sql: str) -> list[tuple[Any, ...]]:
        with sqlite3.connect(self.db) as conn:
            return conn.execute(sql).fetchall()

    def log_lines(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.log.read_text().splitlines() if line.startswith("{")]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> Iterator[Served]:
    root = tmp_path_factory.mktemp("serve-access")
    kb = write_kb(root)
    with SlackStandIn() as slack, telegram_standin() as tg:
        cfg_path = root / "config.toml"
        serve = '[serve]\ntrusted_proxies = ["127.0.0.1"]\n'
        platforms = f'[slack]\napi_base_url = "{slack.api_url}"\n[telegram]\nbase_url = "{tg.base_url}"\n'
        text = _config(root, kb).replace("[log]", serve + platforms + "[log]", 1)
        cfg_path.write_text(text, encoding="utf-8")
        app = build_app(load_config(cfg_path, environ={}), embedder=embedder)
        assert len(app.ingest().added) == 3
        app.store.engine.dispose()
        del app
        env = {**os.environ, **TOKENS, "GROUNDBOT_SLACK_BOT_TOKEN": "xoxb-standin-bot",
               "GROUNDBOT_SLACK_SIGNING_SECRET": SLACK_SECRET, "GROUNDBOT_TELEGRAM_TOKEN": tg.token,
               "GROUNDBOT_TELEGRAM_WEBHOOK_SECRET": TG_SECRET}
        for proxy in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy"):
            env.pop(proxy, None)
        port, log = free_port(), root / "serve.log"
        with serve_subprocess(cfg_path, port, 1, env, log) as proc:
            url = f"http://127.0.0.1:{port}"
            wait_ready(url, proc, log, START_S)
            yield Served(url, root / "records.db", log, cfg_path)
        assert proc.returncode in (0, -signal.SIGTERM)
    assert not [name for name, token in TOKENS.items() if token in log.read_text()]  # no token in any log line


def leaks(response: httpx.Response, own: str = "") -> list[str]:
    """What of a scope a refused response shows: a scope's name (but the caller's `own`), or words
    of its documents."""
    text = response.text.lower()
    return [w for w in SCOPE_WORDS.findall(text) if w != own] + [m for m in HR_MARKS + ENG_MARKS if m in text]


# -- the table of docs/deploy.md -------------------------------------------------------------
def doc_table() -> dict[tuple[str, str], dict[str, str]]:
    """(method, path) -> {kind: cell} of the table under "Who may call each HTTP route?"."""
    text = (ROOT / "docs" / "deploy.md").read_text(encoding="utf-8")
    section = text.split("## Who may call each HTTP route?", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not line.startswith("| `"):
            continue
        method, path = cells[0].strip("`").split(" ", 1)
        assert len(cells) == 2 + len(KINDS), line
        rows[(method, path)] = dict(zip(("who", *KINDS), cells[1:], strict=True))
    return rows


def expected(cell: str) -> int | None:
    """The status a cell says: its first number; None for "—" (no such credential)."""
    if cell == "—":
        return None
    found = re.match(r"(\d{3})\b", cell)
    assert found, f"a cell that says no status: {cell!r}"
    return int(found.group(1))


def test_the_table_lists_every_route_the_server_has(served: Served) -> None:
    asgi = build_asgi(load_config(served.config, environ=TOKENS))
    routes = {(m, getattr(r, "path", "")) for r in asgi.routes for m in (getattr(r, "methods", None) or ()) if m != "HEAD"}
    assert routes == set(doc_table())


def _items(page: str) -> list[str]:
    return re.findall(r'name="item" value="(\d+)"', page)


def _csrf(page: str) -> str:
    found = re.search(r'name="csrf" value="(\w+)"', page)
    assert found, page
    return found.group(1)


class Walk:
    """How each route is asked with each kind of credential, from a given client."""

    def __init__(self, served: Served) -> None:
        self.s = served
        # review items of both scopes (every answer is held for review in this config)
        for token, question in ((HR, HR_QUESTION), (HR, "How do I request annual leave?"), (ENG, ENG_QUESTION)):
            assert served.ask(new_client(), token, question, conversation=question[:20]).status_code == 200
        scope_of = dict(served.rows("SELECT review_item.id, turn.scope FROM review_item JOIN turn "
                                    "ON turn.id = review_item.turn_id WHERE review_item.status = 'open'"))
        self.hr_items = [str(i) for i, s in scope_of.items() if s == "hr"]
        self.eng_item = str(next(i for i, s in scope_of.items() if s == "eng"))
        login = served.post("/review/login", new_client(), data={"token": TOKENS["HR_REVIEW_TOKEN"]})
        assert login.status_code == 303
        self.hr_session = login.cookies[COOKIE]
        self.forged = self.hr_session.replace("hr:", "eng:", 1)
        self.csrf = _csrf(served.get("/review", new_client(), headers={"Cookie": f"{COOKIE}={self.hr_session}"}).text)

    def send(self, method: str, path: str, kind: str, client: str) -> httpx.Response | None:
        handler: Callable[[str, str], httpx.Response | None] = getattr(self, "_" + path.strip("/").replace("/", "_"))
        return handler(kind, client)

    def _open(self, path: str, kind: str, client: str) -> httpx.Response:
        auth = {"wrong": "Bearer not-a-token", "other": f"Bearer {HR}"}.get(kind)
        return self.s.get(path, client, headers={"Authorization": auth} if auth else {})

    def _healthz(self, kind: str, client: str) -> httpx.Response:
        return self._open("/healthz", kind, client)

    def _readyz(self, kind: str, client: str) -> httpx.Response:
        return self._open("/readyz", kind, client)

    def _metrics(self, kind: str, client: str) -> httpx.Response:
        token = {"right": METRICS, "locked": METRICS, "wrong": "not-a-token", "other": HR}.get(kind)
        return self.s.get("/metrics", client, headers={"Authorization": f"Bearer {token}"} if token else {})

    def _api_ask(self, kind: str, client: str) -> httpx.Response:
        if kind == "other":  # engineering's widget naming HR's scope
            return self.s.ask(client, ENG, HR_QUESTION, scope="hr")
        return self.s.ask(client, {"right": HR, "locked": HR, "wrong": "not-a-token"}.get(kind))

    def _mcp(self, kind: str, client: str) -> httpx.Response:
        """MCP's opening request; "other" is HR's review token sent as a bearer token."""
        token = {"right": HR, "locked": HR, "wrong": "not-a-token", "other": TOKENS["HR_REVIEW_TOKEN"]}.get(kind)
        body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "walk", "version": "0"}}}
        headers = {"Accept": "application/json, text/event-stream", **({"Authorization": f"Bearer {token}"} if token else {})}
        r = self.s.post("/mcp", client, json=body, headers=headers)
        if r.status_code == 200:
            assert r.json()["result"]["serverInfo"]["name"] == "groundbot", r.text
        return r

    def _slack_events(self, kind: str, client: str) -> httpx.Response | None:
        if kind == "other":
            return None
        body = json.dumps({"token": "legacy", "type": "url_verification", "challenge": "c-4711"})
        secret = {"right": SLACK_SECRET, "locked": SLACK_SECRET, "wrong": "not-the-secret"}.get(kind)
        headers = {"Content-Type": "application/json", **(sign(body, secret=secret) if secret else {})}
        return self.s.post("/slack/events", client, content=body, headers=headers)

    def _telegram(self, kind: str, client: str) -> httpx.Response | None:
        if kind == "other":
            return None
        secret = {"right": TG_SECRET, "locked": TG_SECRET, "wrong": "not-the-secret"}.get(kind)
        update = {"update_id": 8000 + next(_clients), "message": {
            "message_id": 1, "date": int(time.time()), "text": "hello",
            "chat": {"id": 901, "type": "private", "first_name": "T"}, "from": {"id": 901, "is_bot": False,
                                                                            "first_name": "T"}}}
        headers = {"X-Telegram-Bot-Api-Secret-Token": secret} if secret else {}
        return self.s.post("/telegram", client, json=update, headers=headers)

    def _review_login(self, kind: str, client: str) -> httpx.Response:
        token = {"right": TOKENS["HR_REVIEW_TOKEN"], "locked": TOKENS["HR_REVIEW_TOKEN"], "none": "",
                 "wrong": "not-a-token", "other": HR}[kind]
        return self.s.post("/review/login", client, data={"token": token})

    def _review(self, kind: str, client: str) -> httpx.Response:
        cookie = {"none": None, "wrong": self.forged}.get(kind, self.hr_session)
        r = self.s.get("/review", client, headers={"Cookie": f"{COOKIE}={cookie}"} if cookie else {})
        if r.status_code == 200:  # HR's sign-in: HR's items, none of engineering's
            scopes = dict(self.s.rows("SELECT review_item.id, turn.scope FROM review_item JOIN turn "
                                      "ON turn.id = review_item.turn_id"))
            assert _items(r.text) and {scopes[int(i)] for i in _items(r.text)} == {"hr"}
            assert ENG_QUESTION not in r.text and not [m for m in ENG_MARKS if m in r.text.lower()]
        return r

    def _review_act(self, kind: str, client: str) -> httpx.Response:
        cookie = {"none": None, "wrong": self.forged}.get(kind, self.hr_session)
        item = {"other": self.eng_item, "locked": self.hr_items[1]}.get(kind, self.hr_items[0])
        return self.s.post("/review/act", client, headers={"Cookie": f"{COOKIE}={cookie}"} if cookie else {},
                           data={"item": item, "action": "approve", "csrf": self.csrf})


def test_each_route_answers_each_credential_as_the_table_in_deploy_md_says(served: Served) -> None:
    walk, table = Walk(served), doc_table()
    locked = new_client()  # past the limit: 10 wrong tokens, at one route; the lock is the client's everywhere
    assert [served.ask(locked, f"guess-{n}").status_code for n in range(11)][-1] == 429
    seen = []
    for (method, path), cells in table.items():
        for kind in KINDS:
            want = expected(cells[kind])
            r = walk.send(method, path, kind, locked if kind == "locked" else new_client())
            assert (r.status_code if r is not None else None) == want, (method, path, kind, cells[kind], r and r.text)
            if r is not None and r.status_code >= 400:
                own = "eng" if (path, kind) == ("/api/ask", "other") else ""  # "this token asks in scope 'eng' only"
                assert not leaks(r, own), (method, path, kind, leaks(r, own))
                if r.status_code == 429:
                    assert 1 <= int(r.headers["retry-after"]) <= 60
                if r.status_code == 401 and path in ("/api/ask", "/mcp", "/metrics"):
                    assert r.headers["www-authenticate"] == "Bearer"
            seen.append((method, path, kind))
    assert len(seen) == len(table) * len(KINDS)
    assert served.rows("SELECT status FROM review_item WHERE id = " + walk.eng_item) == [("open",)]


def test_thirty_wrong_tokens_from_one_client_get_429_and_another_client_is_answered(served: Served) -> None:
    guesser, other = new_client(), new_client()
    refused = [served.ask(guesser, f"guess-{n:02d}") for n in range(30)]
    statuses = [r.status_code for r in refused]
    first = statuses.index(429)
    assert first < 29 and statuses[:first] == [401] * first and set(statuses[first:]) == {429}, statuses
    assert first == 10  # [serve] wrong_credentials_per_client
    assert all(1 <= int(r.headers["retry-after"]) <= 60 for r in refused[first:])
    assert served.ask(guesser, HR).status_code == 429  # the right token too, from the guessing client
    answered = served.ask(other, HR, conversation="after-the-guesses")
    assert answered.status_code == 200 and answered.json()["scope"] == "hr" and HR_WORDS in answered.json()["draft"]
    assert all(not leaks(r) and list(r.json()) == ["error"] for r in refused)
    # the refusals counted and kept; one log line for the lock, none for each 429
    metrics = served.get("/metrics", new_client(), headers={"Authorization": f"Bearer {METRICS}"}).text
    count = re.search(r'groundbot_access_refused_total\{reason="too_many_attempts",route="api_ask",scope="",'
                      r'who="none"\} (\d+)', metrics)
    assert count and int(float(count.group(1))) >= 30 - first + 1
    assert ("api_ask", "none", "too_many_attempts", 429) in set(
        served.rows("SELECT route, who, reason, status FROM access_refusal"))
    counted = dict(served.rows(f"SELECT subject, count(*) FROM rate_event WHERE subject LIKE '%client:{guesser}' "
                               "GROUP BY subject"))  # the worker counted in the database, not in its memory
    assert counted == {f"fail:client:{guesser}": 10, f"lock:client:{guesser}": 1}
    time.sleep(0.5)  # the log line is written before the response; the file is flushed by then
    locks = [e for e in served.log_lines() if e.get("lock") == "client" and e.get("client") == guesser]
    assert len(locks) == 1 and "refused with 429" in locks[0]["message"]
    assert not [e for e in served.log_lines() if e.get("reason") == "too_many_attempts" and "lock" not in e]


def test_metrics_without_its_token_is_refused_and_answered_with_it(served: Served) -> None:
    client = new_client()
    for headers in ({}, {"Authorization": "Bearer not-the-token"}, {"Authorization": f"Bearer {TOKENS['GROUNDBOT_API_TOKEN']}"}):
        r = served.get("/metrics", client, headers=headers)
        assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer" and not leaks(r), headers
    r = served.get("/metrics", client, headers={"Authorization": f"Bearer {METRICS}"})
    assert r.status_code == 200 and "groundbot_access_refused_total" in r.text
