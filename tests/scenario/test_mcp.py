"""groundbot as an MCP server, asked with the official `mcp` client as an agent asks it: a real
`groundbot serve` subprocess on 127.0.0.1 over HR's and engineering's scopes, each with its own
token, plus the global one. Both protocol revisions the SDK serves are spoken (2025-11-25 after its
`initialize`, 2026-07-28 per request): the tools are listed with their schemas, `ask` is answered
with its citation in the token's scope and refused with its reason for a question only the other
scope answers, `search` reads the token's scope alone, every ask is one turn recorded with the
platform `mcp`, no token or a wrong one gets 401 and the wrong-credential limit locks a guessing
client. Bad input (a 100,000-character question, arguments of the wrong type, an unknown tool, k
out of range, a malformed JSON-RPC body, a client gone mid-call) gets a JSON-RPC error or a
refusal with its reason, and the worker answers the next call. Nothing of the other scope appears
in any response.

The server trusts 127.0.0.1 as its reverse proxy, so each test's clients are told apart by the
X-Forwarded-For the test sends, as a proxy would."""

from __future__ import annotations

import itertools
import json
import os
import signal
import socket
import sqlite3
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import httpx2
import mcp.types as types
import pytest
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client
from sqlalchemy import create_engine

from bot.app import build_app
from bot.config import load_config
from bot.server.scope_access import ApiAccess, Caller
from storage.records.leases import ConversationLeases
from tests.ports import free_port
from tests.processes import serve_subprocess, wait_ready
from tests.scenario.scoped_kb import ENG_QUESTION, HR_QUESTION, HR_WORDS, write_kb
from tests.scenario.test_scopes_http import ENG_MARKS, HR_MARKS, START_S
from tests.waits import WAIT_S, wait_until

pytestmark = pytest.mark.processes  # starts groundbot serve as an operator does

TOKENS = {"GROUNDBOT_API_TOKEN": "global-api-51e0d7", "HR_API_TOKEN": "hr-agent-a4c913",
          "ENG_API_TOKEN": "eng-agent-7b2f60", "GROUNDBOT_REVIEW_TOKEN": "global-review-0c6e2a"}
GLOBAL, HR, ENG = TOKENS["GROUNDBOT_API_TOKEN"], TOKENS["HR_API_TOKEN"], TOKENS["ENG_API_TOKEN"]
# the Client's modes: the initialize handshake (2025-11-25), and `server/discover` then per request (2026-07-28)
REVISIONS = ("legacy", "auto")
FOLLOW_UP = "And can it be taken in several blocks?"
JSON_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json",
                "MCP-Protocol-Version": "2025-11-25"}
_clients = itertools.count(1)


def new_client() -> str:
    """An address no test used yet (the server counts wrong credentials per client)."""
    n = next(_clients)
    return f"203.0.{113 + n // 250}.{n % 250 + 1}"


def config_text(root: Path, kb: Path) -> str:
    scope = ('[[scopes]]\nname = "{n}"\npaths = ["{kb}/{n}", "{kb}/shared"]\nchats = ["slack:C0{N}"]\n'
             'api_token_env = "{N}_API_TOKEN"\n')
    return (f'[paths]\ndata_dir = "{(root / "data").as_posix()}"\nkb_paths = ["{kb.as_posix()}"]\n'
            f'[storage]\ndatabase_url = "sqlite:///{(root / "records.db").as_posix()}"\n'
            '[serve]\ntrusted_proxies = ["127.0.0.1"]\n[log]\nformat = "json"\nlevel = "info"\n\n'
            + "".join(scope.format(n=n, N=n.upper(), kb=kb.as_posix()) for n in ("hr", "eng")))


def ingested(root: Path, embedder: Any) -> Path:
    """The two teams' knowledge base ingested under `root`, as `groundbot ingest` leaves it; its config."""
    kb = write_kb(root)
    cfg_path = root / "config.toml"
    cfg_path.write_text(config_text(root, kb), encoding="utf-8")
    app = build_app(load_config(cfg_path, environ={}), embedder=embedder)
    assert len(app.ingest().added) == 3
    app.store.engine.dispose()
    return cfg_path


@dataclass
class Served:
    url: str
    db: Path
    log: Path

    @asynccontextmanager
    async def client(self, token: str | None, mode: str = "legacy", forwarded: str = "") -> AsyncIterator[Client]:
        """The official client over streamable HTTP with `token` as its bearer token."""
        headers = {"X-Forwarded-For": forwarded or new_client()}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        async with httpx2.AsyncClient(headers=headers, timeout=WAIT_S) as http, \
                Client(streamable_http_client(self.url + "/mcp", http_client=http), mode=mode) as client:
            yield client

    def post(self, body: bytes, token: str | None, client: str = "", **headers: str) -> httpx.Response:
        """One raw POST /mcp, as a client that speaks no MCP would send it."""
        auth = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.post(self.url + "/mcp", content=body, timeout=WAIT_S,
                          headers={**JSON_HEADERS, "X-Forwarded-For": client or new_client(), **auth, **headers})

    def rows(self, sql: str, *args: Any) -> list[tuple[Any, ...]]:
        with sqlite3.connect(self.db) as conn:
            return conn.execute(sql, args).fetchall()

    def turns(self) -> int:
        return int(self.rows("SELECT count(*) FROM turn")[0][0])


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> Iterator[Served]:
    root = tmp_path_factory.mktemp("mcp-http")
    cfg_path = ingested(root, embedder)
    env = {**os.environ, **TOKENS}
    for proxy in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy"):
        env.pop(proxy, None)
    port, log = free_port(), root / "serve.log"
    with serve_subprocess(cfg_path, port, 1, env, log) as proc:
        url = f"http://127.0.0.1:{port}"
        wait_ready(url, proc, log, START_S)
        yield Served(url, root / "records.db", log)
    assert proc.returncode in (0, -signal.SIGTERM)
    text = log.read_text()
    assert not [name for name, token in TOKENS.items() if token in text]  # no token in any log line
    assert "Traceback" not in text, text[-3000:]  # no call, however bad, crashed anything
    assert '"logger": "mcp.' not in text  # the SDK's line per request is quiet; it had nothing to warn of


def errors(exc: BaseException) -> list[BaseException]:
    """The exceptions an exception group holds, however nested (the client's task groups)."""
    if isinstance(exc, BaseExceptionGroup):
        return [e for inner in exc.exceptions for e in errors(inner)]
    return [exc]


def dumped(result: Any) -> str:
    """Everything a response shows an agent: its text and its structured content."""
    return json.dumps(result.model_dump(mode="json", by_alias=True), ensure_ascii=False).lower()


def leaks(text: str, marks: tuple[str, ...]) -> list[str]:
    return [m for m in marks if m in text.lower()]


def initialize(n: int = 1) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": n, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "probe", "version": "0"}}}).encode()


def call(name: str, arguments: Any, n: int = 1) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": n, "method": "tools/call",
                       "params": {"name": name, "arguments": arguments}}).encode()


@pytest.mark.parametrize("mode", REVISIONS)
async def test_the_tools_are_listed_with_their_schemas(served: Served, mode: str) -> None:
    async with served.client(HR, mode) as client:
        assert client.protocol_version == ("2025-11-25" if mode == "legacy" else "2026-07-28")
        assert client.server_info is not None and client.server_info.name == "groundbot"
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) == {"ask", "search"}
    ask, search = tools["ask"], tools["search"]
    assert ask.input_schema["required"] == ["question"] and set(ask.input_schema["properties"]) == {"question", "conversation"}
    assert search.input_schema["required"] == ["query"] and search.input_schema["properties"]["k"]["maximum"] == 20
    assert ask.output_schema and {"answered", "answer", "citations", "reason", "explanation", "suggestions",
                                  "conversation"} <= set(ask.output_schema["required"])
    assert search.output_schema and search.output_schema["properties"]["passages"]["items"]["required"] == [
        "text", "title", "heading", "url", "source", "score"]
    assert "refusal" in (ask.description or "") and "not that the tool failed" in (ask.description or "")
    assert "use `ask`" in (search.description or "")


@pytest.mark.parametrize("mode", REVISIONS)
async def test_ask_is_answered_with_a_citation_from_the_tokens_scope(served: Served, mode: str) -> None:
    before = served.turns()
    async with served.client(HR, mode) as client:
        result = await client.call_tool("ask", {"question": HR_QUESTION})
        answer = result.structured_content
        assert not result.is_error and answer is not None and answer["answered"] is True, dumped(result)
        assert HR_WORDS in answer["answer"] and "[1]" in answer["answer"] and answer["scope"] == "hr"
        cited = answer["citations"][0]
        assert (cited["number"], cited["title"]) == (1, "Leave policy") and "parental leave" in cited["heading"]
        assert cited["source"] == "kb/hr/leave.md" and answer["reason"] == "" and answer["suggestions"] == []
        text = result.content[0]
        assert isinstance(text, types.TextContent) and HR_WORDS in text.text and "Leave policy" in text.text
        assert f"(conversation: {answer['conversation']})" in text.text
        follow = await client.call_tool("ask", {"question": FOLLOW_UP, "conversation": answer["conversation"]})
    assert follow.structured_content and "three blocks" in follow.structured_content["answer"], dumped(follow)
    assert not leaks(dumped(result) + dumped(follow), ENG_MARKS)
    assert served.turns() == before + 2
    rows = served.rows("SELECT platform, scope, user_id, chat_id FROM turn WHERE uid IN (?, ?)",
                       answer["turn"], follow.structured_content["turn"])
    assert sorted(rows) == [("mcp", "hr", "scope:hr", answer["conversation"])] * 2  # one conversation, platform mcp


async def test_another_holder_naming_the_conversation_starts_a_fresh_one(served: Served) -> None:
    async with served.client(HR) as hr:
        started = (await hr.call_tool("ask", {"question": HR_QUESTION})).structured_content
    assert started and started["answered"]
    async with served.client(ENG) as eng:
        hijack = await eng.call_tool("ask", {"question": FOLLOW_UP, "conversation": started["conversation"]})
    assert hijack.structured_content and hijack.structured_content["scope"] == "eng"
    assert not leaks(dumped(hijack), HR_MARKS), leaks(dumped(hijack), HR_MARKS)
    (record,) = served.rows("SELECT record FROM turn WHERE uid = ?", hijack.structured_content["turn"])
    assert json.loads(record[0])["history"] == "none"  # engineering's own conversation, not HR's


@pytest.mark.parametrize("mode", REVISIONS)
async def test_a_question_only_the_other_scope_answers_is_refused_with_its_reason(served: Served, mode: str) -> None:
    before = served.turns()
    async with served.client(HR, mode) as client:
        result = await client.call_tool("ask", {"question": ENG_QUESTION})
    refusal = result.structured_content
    assert not result.is_error and refusal is not None and refusal["answered"] is False, dumped(result)
    assert refusal["reason"] in ("NO_MATCHING_SOURCE", "LOW_CONFIDENCE", "OFF_TOPIC", "NOT_ANSWERED_BY_SOURCES")
    assert refusal["explanation"] and refusal["message"] and refusal["answer"] == "" and refusal["citations"] == []
    assert refusal["scope"] == "hr" and f"[{refusal['reason']}]" in result.content[0].text  # type: ignore[union-attr]
    assert not leaks(dumped(result), ENG_MARKS), leaks(dumped(result), ENG_MARKS)
    assert served.turns() == before + 1  # the refusal is a turn like an answer
    assert served.rows("SELECT refused, refusal_reason, platform FROM turn WHERE uid = ?", refusal["turn"]) == [
        (1, refusal["reason"], "mcp")]


@pytest.mark.parametrize("mode", REVISIONS)
async def test_search_returns_passages_of_the_tokens_scope_only(served: Served, mode: str) -> None:
    before = served.turns()
    async with served.client(ENG, mode) as eng, served.client(HR, mode) as hr:
        own = await eng.call_tool("search", {"query": ENG_QUESTION, "k": 2})
        other = await eng.call_tool("search", {"query": HR_QUESTION})
        mine = await hr.call_tool("search", {"query": HR_QUESTION, "k": 3})
    found = own.structured_content
    assert found and found["scope"] == "eng" and len(found["passages"]) == 2, dumped(own)
    first = found["passages"][0]
    assert "rollback job" in first["text"] and first["title"] == "Deployment runbook" and 0 < first["score"] <= 1
    assert [p["score"] for p in found["passages"]] == sorted((p["score"] for p in found["passages"]), reverse=True)
    assert other.structured_content and all(not p["source"].endswith("leave.md") for p in other.structured_content["passages"])
    assert len(other.structured_content["passages"]) == 3  # k is 5 by default; engineering's scope holds 3 chunks
    # all but the query echoed (in the JSON text as in the structured content)
    shown = json.dumps([own.content[0], other.content[0], own.structured_content["passages"],
                        other.structured_content["passages"]], default=repr)
    assert not leaks(shown, HR_MARKS), leaks(shown, HR_MARKS)
    assert mine.structured_content and HR_WORDS in mine.structured_content["passages"][0]["text"]
    assert not leaks(dumped(mine), ENG_MARKS)
    assert served.turns() == before  # a search is not a turn: nothing was answered


async def test_the_global_token_asks_in_the_scope_that_serves_mcp_or_is_told_none_does(served: Served) -> None:
    """No [[scopes]] entry serves the chat "mcp" and there is no default scope: the call is refused,
    reading nothing, and says so; the turn is recorded."""
    async with served.client(GLOBAL) as client:
        asked = await client.call_tool("ask", {"question": HR_QUESTION})
        searched = await client.call_tool("search", {"query": HR_QUESTION})
    assert asked.structured_content and asked.structured_content["reason"] == "CHAT_NOT_SET_UP", dumped(asked)
    assert searched.is_error and searched.structured_content is None and searched.content[0].text == (  # type: ignore[union-attr]
        "Refused (CHAT_NOT_SET_UP): No knowledge scope serves this chat, and no default scope is configured.")
    assert not leaks(dumped(asked) + dumped(searched), HR_MARKS + ENG_MARKS)


async def test_no_token_or_a_wrong_one_is_refused_with_401(served: Served) -> None:
    before = served.turns()
    for token in (None, "not-a-token", TOKENS["GROUNDBOT_REVIEW_TOKEN"], HR[:-1]):
        with pytest.raises(BaseExceptionGroup) as refused:  # the client cannot even initialize
            async with served.client(token) as client:
                await client.list_tools()
        assert [type(e) for e in errors(refused.value)] == [MCPError], repr(refused.value)
        r = served.post(initialize(), token)
        assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer"
        assert r.json() == {"error": "missing bearer token" if token is None else "missing or wrong bearer token"}
    r = httpx.post(served.url + "/mcp?token=" + HR, content=initialize(), headers=JSON_HEADERS, timeout=WAIT_S)
    assert r.status_code == 400 and "/mcp takes no query parameters" in r.text and HR not in r.text
    assert served.turns() == before
    refusals = set(served.rows("SELECT route, who, reason, status FROM access_refusal WHERE route = 'mcp'"))
    assert {("mcp", "none", "no_token", 401), ("mcp", "none", "wrong_token", 401)} <= refusals


def test_a_web_page_of_another_origin_is_refused_and_the_same_origin_answered(served: Served) -> None:
    host = served.url.removeprefix("http://")
    for origin in ("http://evil.example", f"http://{host}.evil.example", "null", "http://127.0.0.1"):
        r = served.post(initialize(), HR, Origin=origin)
        assert r.status_code == 403 and r.json() == {"error": "/mcp answers no request from a web page of another origin"}
    assert served.post(initialize(), HR, Origin=f"http://{host}").status_code == 200
    assert ("mcp", "none", "cross_origin", 403) in set(served.rows("SELECT route, who, reason, status FROM access_refusal"))


async def test_ten_wrong_tokens_lock_the_client_and_another_client_is_answered(served: Served) -> None:
    guesser = new_client()
    statuses = [served.post(initialize(), f"guess-{n}", guesser).status_code for n in range(12)]
    assert statuses == [401] * 10 + [429] * 2  # [serve] wrong_credentials_per_client
    locked = served.post(initialize(), HR, guesser)
    assert locked.status_code == 429 and 1 <= int(locked.headers["retry-after"]) <= 60  # the right token too
    with pytest.raises(BaseExceptionGroup) as refused:
        async with served.client(HR, forwarded=guesser) as client:
            await client.list_tools()
    assert [type(e) for e in errors(refused.value)] == [MCPError], repr(refused.value)
    async with served.client(HR) as other:
        result = await other.call_tool("ask", {"question": HR_QUESTION})
    assert result.structured_content and result.structured_content["answered"]
    assert ("mcp", "too_many_attempts", 429) in set(served.rows("SELECT route, reason, status FROM access_refusal"))


# -- bad input -------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", REVISIONS)
async def test_a_100000_character_question_is_refused_with_its_reason_and_recorded(served: Served, mode: str) -> None:
    before = served.turns()
    async with served.client(HR, mode) as client:
        question = ("How much parental leave do I get? " * 3000)[:99_999] + "?"
        result = await client.call_tool("ask", {"question": question})
    refusal = result.structured_content
    assert refusal and not result.is_error and refusal["reason"] == "INPUT_REJECTED", dumped(result)
    assert "too long (100000 characters; the limit is 2000)" in refusal["explanation"]
    assert served.turns() == before + 1
    (stored,) = served.rows("SELECT length(question), platform FROM turn WHERE uid = ?", refusal["turn"])
    assert stored == (2000, "mcp")  # kept as the intake cut it, not 100 kB


@pytest.mark.parametrize("mode", REVISIONS)
async def test_arguments_of_the_wrong_kind_are_refused_with_input_rejected_and_nothing_runs(served: Served,
                                                                                            mode: str) -> None:
    before = served.turns()
    cases = [("ask", {"question": 42}, "'question' is required and must be a string, not a number"),
             ("ask", {"question": ["a", "b"]}, "not an array"),
             ("ask", {}, "'question' is required and must be a string"),
             ("ask", {"question": HR_QUESTION, "conversation": 7}, "'conversation' must be a string, not a number"),
             ("ask", {"question": HR_QUESTION, "conversation": "c" * 201}, "1 to 200 characters"),
             ("ask", {"question": HR_QUESTION, "scope": "eng"}, "ask takes no argument 'scope'"),
             ("search", {"query": {"q": 1}}, "'query' is required and must be a string, not an object"),
             ("search", {"query": HR_QUESTION, "k": 0}, "'k' must be a whole number from 1 to 20; got 0"),
             ("search", {"query": HR_QUESTION, "k": 10_000}, "'k' must be a whole number from 1 to 20; got 10000"),
             ("search", {"query": HR_QUESTION, "k": "5"}, "'k' must be a whole number from 1 to 20, not a string"),
             ("search", {"query": HR_QUESTION, "k": True}, "not a boolean"),
             ("search", {"query": "   "}, "The message is empty")]
    async with served.client(HR, mode) as client:
        for name, arguments, says in cases:
            result = await client.call_tool(name, arguments)
            # no structured content: the output schema describes a result, and the text says why there is none
            assert result.is_error and result.structured_content is None, (name, arguments, dumped(result))
            text = result.content[0].text  # type: ignore[union-attr]
            assert text.startswith("Refused (INPUT_REJECTED): ") and says in text, (says, text)
        assert served.turns() == before  # nothing was asked
        answered = await client.call_tool("ask", {"question": HR_QUESTION})
    assert answered.structured_content and answered.structured_content["answered"]  # the worker is unharmed


@pytest.mark.parametrize("mode", REVISIONS)
async def test_an_unknown_tool_is_a_json_rpc_error(served: Served, mode: str) -> None:
    async with served.client(HR, mode) as client:
        for name in ("delete_everything", "x" * 5000, "Ask"):
            with pytest.raises(MCPError) as error:
                await client.call_tool(name, {"question": HR_QUESTION})
            assert error.value.error.code == types.INVALID_PARAMS
            assert "groundbot's tools are ask and search" in error.value.error.message
            assert len(error.value.error.message) < 200
        assert (await client.call_tool("search", {"query": HR_QUESTION})).structured_content


def test_a_malformed_json_rpc_body_is_a_json_rpc_error_and_the_worker_answers_the_next(served: Served) -> None:
    for version in ("2025-11-25", "2026-07-28"):
        for body in (b"{not json", b"[]", b'{"jsonrpc": "2.0"}', b"\xff\xfe", b'"ask"', call("ask", "a string")):
            r = served.post(body, HR, **{"MCP-Protocol-Version": version})
            assert r.status_code in (200, 400), (version, body, r.status_code, r.text)
            error = r.json()["error"]
            assert error["code"] in (types.PARSE_ERROR, types.INVALID_REQUEST, types.INVALID_PARAMS), (version, body, r.text)
            assert not leaks(r.text, HR_MARKS + ENG_MARKS)
    assert served.post(b"{" + b" " * 1_100_000 + b"}", HR).status_code == 413  # over 1 MB: not read
    r = served.post(call("ask", {"question": HR_QUESTION}), HR)
    assert r.status_code == 200 and r.json()["result"]["structuredContent"]["answered"] is True


def test_a_client_gone_mid_call_leaves_the_turn_to_finish_recorded_and_the_worker_unharmed(served: Served) -> None:
    """The call waits for its conversation's lease, held here as another worker's turn would hold
    it; the client goes once the call has begun, and the turn then runs to its end and is recorded."""
    before, conversation = served.turns(), f"gone-mid-call-{new_client()}"
    key = ApiAccess.key(Caller("scope:hr", "hr", HR.encode()), "hr", conversation, platform="mcp").as_str()
    host, port = served.url.removeprefix("http://").split(":")
    body = call("ask", {"question": HR_QUESTION, "conversation": conversation})
    head = "".join(f"{k}: {v}\r\n" for k, v in {**JSON_HEADERS, "Host": f"{host}:{port}", "Authorization": f"Bearer {HR}",
                                              "Content-Length": str(len(body)), "Connection": "close"}.items())
    engine = create_engine(f"sqlite:///{served.db}")
    with ConversationLeases(engine, "another-worker").conversation(key, WAIT_S), \
            socket.create_connection((host, int(port)), timeout=WAIT_S) as sock:
        sock.sendall(f"POST /mcp HTTP/1.1\r\n{head}\r\n".encode() + body)
        wait_until(lambda: f'"conversation": "{key}"' in served.log.read_text(), WAIT_S, interval=0.1,
                   what="the call to begin")  # "mcp ask", logged as the turn is handed to the backend
        sock.shutdown(socket.SHUT_RDWR)  # gone without reading a byte of the answer
    engine.dispose()
    wait_until(lambda: served.turns() == before + 1, WAIT_S, interval=0.2, what="the abandoned turn to be recorded")
    assert served.rows("SELECT platform, refused FROM turn WHERE chat_id = ?", conversation) == [("mcp", 0)]
    r = served.post(call("ask", {"question": HR_QUESTION}), HR)
    assert r.status_code == 200 and r.json()["result"]["structuredContent"]["answered"] is True


def test_a_call_before_initialize_a_batch_and_a_10_mb_body_are_protocol_errors_and_the_worker_serves_on(
        served: Served) -> None:
    """Over HTTP every request stands on its own (the session manager is stateless): a call with no
    `initialize` before it is answered, and recorded. A batch of 100 asks is one JSON-RPC error
    saying MCP has no batches (none is asked); a 10 MB body, declared or streamed, gets 413 with a
    JSON-RPC error, unparsed."""
    before = served.turns()
    r = served.post(call("ask", {"question": HR_QUESTION}), HR)
    assert r.status_code == 200 and r.json()["result"]["structuredContent"]["answered"] is True
    assert served.turns() == before + 1
    batch = json.dumps([json.loads(call("ask", {"question": HR_QUESTION}, n)) for n in range(1, 101)]).encode()
    r = served.post(batch, HR)
    assert r.status_code == 400 and r.json() == {"jsonrpc": "2.0", "id": None, "error": {
        "code": types.INVALID_REQUEST, "message": "JSON-RPC batches are not part of MCP (since its 2025-06-18 "
                                                  "revision): send each request as a message of its own"}}
    assert served.turns() == before + 1  # nothing of the batch was asked
    ten_mb = call("ask", {"question": "word " * 2_000_000})
    assert len(ten_mb) > 10_000_000
    for body in (ten_mb, iter([ten_mb[i:i + 1_000_000] for i in range(0, len(ten_mb), 1_000_000)])):
        r = httpx.post(served.url + "/mcp", content=body, timeout=WAIT_S,
                       headers={**JSON_HEADERS, "X-Forwarded-For": new_client(), "Authorization": f"Bearer {HR}"})
        assert r.status_code == 413 and r.json()["error"]["code"] == types.INVALID_REQUEST
        assert "over 1,000,000 bytes" in r.json()["error"]["message"]
    assert served.turns() == before + 1
    r = served.post(call("search", {"query": HR_QUESTION}), HR)
    assert r.status_code == 200 and r.json()["result"]["structuredContent"]["passages"]
