"""The MCP tools over a real App on the bundled docs, through the official client in the same
process (the SDK's in-memory transport for the 2025-11-25 handshake, its direct dispatch for
2026-07-28): what an agent reads of an answer, a refusal and a search, and every bad argument
refused with what to send instead. No server process: the fast lane's check of adapters/mcp;
tests/scenario/test_mcp.py asks a real `groundbot serve`."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import mcp.types as types
import pytest
from mcp import Client, MCPError

from adapters.mcp import Asker, build_server
from adapters.mcp.tools import OUTPUTS
from bot.app import App
from core.messages import NOT_SET_UP, ConversationKey
from storage.records.tables import TurnRecord

MODES = ("legacy", "auto")
DOCS = Path(__file__).resolve().parents[2] / "docs"  # the bundled docs the make_app index holds


def server(app: App, scope: str | None = None, user: str = "agent") -> Any:
    asker = Asker(scope, user, lambda chat: ConversationKey("mcp", chat, "in-process"))
    return build_server(lambda: app, lambda _request: asker, version="test")


def readable(tool: str, result: types.CallToolResult) -> types.CallToolResult:
    """`result` as every client can read it: a result's structured content fits the tool's output
    schema and comes again as JSON text, names no path of the server's file system; an error carries
    no structured content (the schema describes results) and says in its text why, by reason code."""
    texts = [b.text for b in result.content if isinstance(b, types.TextContent)]
    if result.is_error:
        assert result.structured_content is None and texts and texts[0].startswith("Refused ("), result
        return result
    assert result.structured_content is not None
    jsonschema.validate(result.structured_content, OUTPUTS[tool])
    assert json.loads(texts[-1]) == result.structured_content
    sources = [c["source"] for c in result.structured_content.get("citations", [])]
    sources += [p["source"] for p in result.structured_content.get("passages", [])]
    assert all(s.startswith("http") or not Path(s).is_absolute() for s in sources), sources
    assert str(Path.cwd()) not in json.dumps(result.model_dump(mode="json"))
    return result


def turns(app: App) -> list[TurnRecord]:
    from sqlmodel import Session, select

    with Session(app.store.engine) as session:
        return list(session.exec(select(TurnRecord).order_by(TurnRecord.id)))  # type: ignore[arg-type]


@pytest.mark.parametrize("mode", MODES)
async def test_an_answer_a_refusal_and_a_search_as_an_agent_reads_them(make_app: Callable[..., App], mode: str) -> None:
    app = make_app()
    async with Client(server(app), mode=mode) as client:
        answer = readable("ask", await client.call_tool("ask", {"question": "How do I re-ingest documents?"}))
        refusal = readable("ask", await client.call_tool("ask", {"question": "Can I store transcripts in MySQL?"}))
        found = readable("search", await client.call_tool("search", {"query": "How do I re-ingest documents?", "k": 3}))
    a = answer.structured_content
    assert a and a["answered"] and a["answer"] and a["citations"] and a["reason"] == "" and "scope" not in a
    assert all(f"[{c['number']}]" in a["answer"] for c in a["citations"])  # each citation is cited in the answer
    assert a["citations"][0]["source"].endswith(("faq.yaml", "ingesting.md")) and a["conversation"].startswith("mcp-")
    r = refusal.structured_content
    assert r and not r["answered"] and r["reason"] and r["explanation"] and r["message"] and r["suggestions"]
    assert r["answer"] == "" and r["citations"] == [] and not refusal.is_error  # a refusal is a result
    text = refusal.content[0]
    assert isinstance(text, types.TextContent) and f"[{r['reason']}]" in text.text and r["suggestions"][0] in text.text
    passages = found.structured_content["passages"] if found.structured_content else []
    assert len(passages) == 3 and "re-ingest" in passages[0]["text"] and passages[0]["source"].startswith("docs/")
    assert str(DOCS) not in json.dumps(found.model_dump(mode="json"))  # the server's own path of the file is not sent
    recorded = turns(app)
    assert [(t.platform, t.user_id, t.uid) for t in recorded] == [("mcp", "agent", a["turn"]), ("mcp", "agent", r["turn"])]


async def test_a_conversation_continues_under_the_same_asker_only(make_app: Callable[..., App]) -> None:
    app = make_app()
    async with Client(server(app)) as client:
        first = (await client.call_tool("ask", {"question": "How do I re-ingest documents?"})).structured_content
        assert first and first["answered"]
        again = await client.call_tool("ask", {"question": "And from Slack?", "conversation": first["conversation"]})
    assert again.structured_content and again.structured_content["conversation"] == first["conversation"]
    rows = turns(app)
    assert rows[0].conversation_id == rows[1].conversation_id and rows[1].record["history"] == "loaded"


async def test_bad_arguments_are_refused_with_what_to_send_and_an_unknown_tool_is_an_error(
        make_app: Callable[..., App]) -> None:
    app = make_app()
    async with Client(server(app)) as client:
        for name, arguments in (("ask", {"question": None}), ("ask", {"question": "x", "conversation": ""}),
                                ("search", {"query": "x", "k": -1}), ("search", {"query": "x", "k": 2.5}),
                                ("search", {"query": "x", "k": 10**30}), ("search", {"q": "x"})):
            result = readable(name, await client.call_tool(name, arguments))
            assert result.is_error and result.structured_content is None, (name, arguments)
            text = result.content[0].text  # type: ignore[union-attr]
            assert text.startswith("Refused (INPUT_REJECTED): ") and len(text) < 250, text
        whole = await client.call_tool("search", {"query": "How do I re-ingest documents?", "k": 2.0})
        with pytest.raises(MCPError) as unknown:
            await client.call_tool("answer", {"question": "x"})
    assert whole.structured_content and len(whole.structured_content["passages"]) == 2  # 2.0 is a whole number
    assert unknown.value.error.code == types.INVALID_PARAMS and "tools are ask and search" in unknown.value.error.message
    assert turns(app) == []  # nothing was asked


async def test_a_caller_no_scope_serves_is_refused_without_reading_anything(make_app: Callable[..., App]) -> None:
    app = make_app()
    async with Client(server(app, scope=NOT_SET_UP)) as client:
        asked = await client.call_tool("ask", {"question": "How do I re-ingest documents?"})
        searched = await client.call_tool("search", {"query": "How do I re-ingest documents?"})
    assert asked.structured_content and asked.structured_content["reason"] == "CHAT_NOT_SET_UP"
    assert readable("search", searched).is_error
    assert searched.content[0].text.startswith("Refused (CHAT_NOT_SET_UP): No knowledge scope serves")  # type: ignore[union-attr]
    assert "ingest" not in str(searched.content) and asked.structured_content["suggestions"] == []


async def test_a_call_before_the_app_is_built_is_an_error_that_says_so() -> None:
    asker = Asker(None, "agent", lambda chat: ConversationKey("mcp", chat))
    async with Client(build_server(lambda: None, lambda _request: asker)) as client:
        assert {t.name for t in (await client.list_tools()).tools} == {"ask", "search"}
        with pytest.raises(MCPError) as starting:
            await client.call_tool("ask", {"question": "How do I re-ingest documents?"})
    assert starting.value.error.code == types.INTERNAL_ERROR and "still starting" in starting.value.error.message


async def test_groundbot_is_built_on_the_first_call_that_needs_it_not_to_list_the_tools(
        make_app: Callable[..., App]) -> None:
    """`groundbot mcp` answers `initialize` and `tools/list` before any model is loaded: the server
    asks for groundbot (here counted) only when a call is to be answered, never for a bad one."""
    app, asked = make_app(), []

    def knowledge() -> App:
        asked.append(1)
        return app

    asker = Asker(None, "agent", lambda chat: ConversationKey("mcp", chat))
    async with Client(build_server(knowledge, lambda _request: asker)) as client:
        assert {t.name for t in (await client.list_tools()).tools} == {"ask", "search"}
        assert (await client.call_tool("search", {"query": "x", "k": 0})).is_error
        assert asked == []
        found = readable("search", await client.call_tool("search", {"query": "How do I re-ingest documents?"}))
    assert asked == [1] and found.structured_content and found.structured_content["passages"]
