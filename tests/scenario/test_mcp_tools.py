"""The MCP tools over a real App on the bundled docs, through the official client in the same
process (the SDK's in-memory transport for the 2025-11-25 handshake, its direct dispatch for
2026-07-28): what an agent reads of an answer, a refusal and a search, and every bad argument
refused with what to send instead. No server process: the fast lane's check of adapters/mcp;
tests/scenario/test_mcp.py asks a real `groundbot serve`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import mcp.types as types
import pytest
from mcp import Client, MCPError

from adapters.mcp import Asker, build_server
from bot.app import App
from core.messages import NOT_SET_UP, ConversationKey
from storage.records.tables import TurnRecord

MODES = ("legacy", "auto")
DOCS = Path(__file__).resolve().parents[2] / "docs"  # the bundled docs the make_app index holds


def server(app: App, scope: str | None = None, user: str = "agent") -> Any:
    asker = Asker(scope, user, lambda chat: ConversationKey("mcp", chat, "in-process"))
    return build_server(lambda: app, lambda _request: asker, version="test")


def turns(app: App) -> list[TurnRecord]:
    from sqlmodel import Session, select

    with Session(app.store.engine) as session:
        return list(session.exec(select(TurnRecord).order_by(TurnRecord.id)))  # type: ignore[arg-type]


@pytest.mark.parametrize("mode", MODES)
async def test_an_answer_a_refusal_and_a_search_as_an_agent_reads_them(make_app: Callable[..., App], mode: str) -> None:
    app = make_app()
    async with Client(server(app), mode=mode) as client:
        answer = await client.call_tool("ask", {"question": "How do I re-ingest documents?"})
        refusal = await client.call_tool("ask", {"question": "Can I store transcripts in MySQL?"})
        found = await client.call_tool("search", {"query": "How do I re-ingest documents?", "k": 3})
    a = answer.structured_content
    assert a and a["answered"] and a["answer"] and a["citations"] and a["reason"] == "" and a["scope"] is None
    assert all(f"[{c['number']}]" in a["answer"] for c in a["citations"])  # each citation is cited in the answer
    assert a["citations"][0]["source"].endswith(("faq.yaml", "ingesting.md")) and a["conversation"].startswith("mcp-")
    r = refusal.structured_content
    assert r and not r["answered"] and r["reason"] and r["explanation"] and r["message"] and r["suggestions"]
    assert r["answer"] == "" and r["citations"] == [] and not refusal.is_error  # a refusal is a result
    text = refusal.content[0]
    assert isinstance(text, types.TextContent) and f"[{r['reason']}]" in text.text and r["suggestions"][0] in text.text
    passages = found.structured_content["passages"] if found.structured_content else []
    assert len(passages) == 3 and "re-ingest" in passages[0]["text"] and passages[0]["source"].startswith(str(DOCS))
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
            result = await client.call_tool(name, arguments)
            assert result.is_error and result.structured_content, (name, arguments)
            assert result.structured_content["reason"] == "INPUT_REJECTED" and len(result.structured_content["explanation"]) < 200
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
    assert searched.is_error and searched.structured_content and searched.structured_content["reason"] == "CHAT_NOT_SET_UP"
    assert "ingest" not in str(searched.content) and asked.structured_content["suggestions"] == []


async def test_a_call_before_the_app_is_built_is_an_error_that_says_so() -> None:
    asker = Asker(None, "agent", lambda chat: ConversationKey("mcp", chat))
    async with Client(build_server(lambda: None, lambda _request: asker)) as client:
        assert {t.name for t in (await client.list_tools()).tools} == {"ask", "search"}
        with pytest.raises(MCPError) as starting:
            await client.call_tool("ask", {"question": "How do I re-ingest documents?"})
    assert starting.value.error.code == types.INTERNAL_ERROR and "still starting" in starting.value.error.message
