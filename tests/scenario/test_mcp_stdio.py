"""`groundbot mcp --scope NAME` as an editor starts it: a subprocess the official `mcp` client
talks to over stdin and stdout, on the two teams' knowledge base. The tools are listed with their
schemas; `ask` is answered with its citation from the scope on the command line and refused with
its reason for a question only the other scope answers; `search` reads that scope alone; each
ask is a turn recorded with the platform `mcp`; bad arguments and an unknown tool get a refusal
with its reason or a JSON-RPC error, and the process answers the next call. A first run that
ingests the knowledge base says so on stderr, never on stdout, which carries the protocol."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import mcp.types as types
import pytest
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.stdio import stdio_client

from tests.scenario.scoped_kb import ENG_QUESTION, HR_QUESTION, HR_WORDS, write_kb
from tests.scenario.test_mcp import ENG_MARKS, HR_MARKS, config_text, dumped, ingested, leaks

pytestmark = pytest.mark.processes  # starts `groundbot mcp` as an editor does

ROOT = Path(__file__).resolve().parents[2]


@asynccontextmanager
async def stdio(cfg: Path, *args: str, mode: str = "legacy") -> AsyncIterator[Client]:
    """The official client over `groundbot --config CFG mcp ARGS`; the process's stderr to a file."""
    params = StdioServerParameters(command=sys.executable, args=["-m", "bot.cli.main", "--config", str(cfg), "mcp", *args],
                                   cwd=ROOT, env=dict(os.environ))
    with (cfg.parent / "mcp-stderr.log").open("a", encoding="utf-8") as errlog:
        async with Client(stdio_client(params, errlog=errlog), mode=mode, read_timeout_seconds=300) as client:
            yield client


def rows(db: Path, sql: str, *args: Any) -> list[tuple[Any, ...]]:
    with sqlite3.connect(db) as conn:
        return conn.execute(sql, args).fetchall()


async def test_the_tools_over_stdio_answer_and_search_in_the_scope_named(tmp_path: Path, embedder: Any) -> None:
    cfg = ingested(tmp_path, embedder)
    db = tmp_path / "records.db"
    async with stdio(cfg, "--scope", "hr") as client:
        assert client.protocol_version == "2025-11-25" and client.server_info and client.server_info.name == "groundbot"
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert set(tools) == {"ask", "search"} and tools["ask"].output_schema and tools["search"].output_schema
        answered = await client.call_tool("ask", {"question": HR_QUESTION})
        refused = await client.call_tool("ask", {"question": ENG_QUESTION})
        searched = await client.call_tool("search", {"query": ENG_QUESTION, "k": 3})
        wrong = await client.call_tool("search", {"query": HR_QUESTION, "k": 10_000})
        with pytest.raises(MCPError) as unknown:
            await client.call_tool("rm", {})
        long = await client.call_tool("ask", {"question": "word " * 20_000})
        again = await client.call_tool("ask", {"question": HR_QUESTION})
    a = answered.structured_content
    assert a and a["answered"] and HR_WORDS in a["answer"] and a["scope"] == "hr", dumped(answered)
    assert a["citations"][0]["title"] == "Leave policy" and a["citations"][0]["source"] == "kb/hr/leave.md"
    r = refused.structured_content
    assert r and not r["answered"] and r["reason"] and r["explanation"] and r["scope"] == "hr", dumped(refused)
    passages = searched.structured_content["passages"] if searched.structured_content else []
    assert passages and all("/eng/" not in p["source"] for p in passages), dumped(searched)
    assert not leaks(dumped(refused) + json.dumps(passages), ENG_MARKS)
    assert wrong.is_error and wrong.structured_content is None
    assert wrong.content[0].text.startswith("Refused (INPUT_REJECTED): 'k' must be")  # type: ignore[union-attr]
    assert unknown.value.error.code == types.INVALID_PARAMS
    assert long.structured_content and long.structured_content["reason"] == "INPUT_REJECTED"
    assert again.structured_content and again.structured_content["answered"]  # the process is unharmed
    turns = rows(db, "SELECT uid, platform, scope, user_id, refused FROM turn ORDER BY id")
    assert [t[1:] for t in turns] == [("mcp", "hr", "mcp", 0), ("mcp", "hr", "mcp", 1), ("mcp", "hr", "mcp", 1),
                                      ("mcp", "hr", "mcp", 0)]  # one turn per ask, none for the searches
    assert [t[0] for t in turns] == [a["turn"], r["turn"], long.structured_content["turn"], again.structured_content["turn"]]


async def test_a_first_run_ingests_on_stderr_and_speaks_the_2026_revision_on_stdout(tmp_path: Path) -> None:
    kb = write_kb(tmp_path)
    cfg = tmp_path / "config.toml"
    cfg.write_text(config_text(tmp_path, kb), encoding="utf-8")  # nothing ingested yet
    async with stdio(cfg, "--scope", "eng", mode="auto") as client:
        assert client.protocol_version == "2026-07-28"
        first = await client.call_tool("ask", {"question": ENG_QUESTION})
        assert first.structured_content and first.structured_content["answered"], dumped(first)
        follow = await client.call_tool("ask", {"question": "And how long does it take?",
                                                "conversation": first.structured_content["conversation"]})
        searched = await client.call_tool("search", {"query": HR_QUESTION})
    assert follow.structured_content and "five minutes" in follow.structured_content["answer"], dumped(follow)
    assert searched.structured_content and not leaks(json.dumps(searched.structured_content["passages"]), HR_MARKS)
    stderr = (tmp_path / "mcp-stderr.log").read_text(encoding="utf-8")
    assert "The knowledge base was empty; ingested" in stderr and "serving ask and search over stdio (scope eng)" in stderr


@pytest.mark.parametrize(("args", "says"), [
    ((), "knowledge scopes are configured and none serves MCP: name one with --scope NAME (scopes: hr, eng)"),
    (("--scope", "finance"), "unknown scope 'finance' (scopes: hr, eng)"),
])
def test_a_scope_missing_or_unknown_is_refused_before_anything_starts(tmp_path: Path, args: tuple[str, ...],
                                                                     says: str) -> None:
    kb = write_kb(tmp_path)
    cfg = tmp_path / "config.toml"
    cfg.write_text(config_text(tmp_path, kb), encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "bot.cli.main", "--config", str(cfg), "mcp", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert done.returncode == 2 and done.stdout == "" and f"groundbot mcp: {says}" in done.stderr, done.stderr
    assert not (tmp_path / "data" / "index").exists()  # nothing was read or built


def test_bad_input_over_stdio_gets_protocol_errors_and_every_ask_is_a_turn(tmp_path: Path, embedder: Any) -> None:
    """A client that writes what it likes on `groundbot mcp`'s stdin, line by line: a call before
    `initialize`, a batch of 100 asks, a line that is not JSON, a 10 MB question, an argument of the
    wrong type, then an ask it does not wait for (stdin closed mid-call). Each gets a JSON-RPC error
    or a result that says why; the process answers the next line; the two asks are two turns."""
    cfg = ingested(tmp_path, embedder)
    proc = subprocess.Popen([sys.executable, "-m", "bot.cli.main", "--config", str(cfg), "mcp", "--scope", "hr"],
                            cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=(tmp_path / "mcp-stderr.log").open("wb"))
    assert proc.stdin and proc.stdout

    def send(message: Any) -> None:
        assert proc.stdin
        proc.stdin.write((message if isinstance(message, bytes) else json.dumps(message).encode()) + b"\n")
        proc.stdin.flush()

    def answer() -> dict[str, Any]:
        assert proc.stdout
        return dict(json.loads(proc.stdout.readline()))

    def ask(n: int, arguments: Any) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {"name": "ask", "arguments": arguments}}

    try:
        send(ask(1, {"question": HR_QUESTION}))
        early = answer()
        assert early["id"] == 1 and early["error"]["code"] == types.INVALID_PARAMS
        assert "not initialized; send `initialize`" in early["error"]["message"]
        send([ask(n, {"question": HR_QUESTION}) for n in range(100, 200)])
        batch = answer()
        assert batch["id"] is None and batch["error"]["code"] == types.INVALID_REQUEST
        assert "batches are not part of MCP" in batch["error"]["message"]
        send(b"{not json")
        assert answer()["error"] == {"code": types.PARSE_ERROR,
                                     "message": "The message is not JSON: send one JSON-RPC request per line"}
        send({"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}})
        assert answer()["result"]["serverInfo"]["name"] == "groundbot"
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        send(ask(3, {"question": "word " * 2_000_000}))  # a 10 MB line
        long = answer()["result"]
        assert long["structuredContent"]["reason"] == "INPUT_REJECTED" and "too long" in long["structuredContent"]["explanation"]
        send(ask(4, {"question": ["not", "a", "string"]}))
        wrong = answer()["result"]
        assert wrong["isError"] is True and "structuredContent" not in wrong
        assert wrong["content"][0]["text"] == "Refused (INPUT_REJECTED): 'question' is required and must be a string, not an array."
        send(ask(5, {"question": HR_QUESTION}))
        proc.stdin.close()  # gone mid-call, reading nothing more
        assert proc.wait(timeout=120) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    turns = rows(tmp_path / "records.db", "SELECT platform, refused, length(question) FROM turn ORDER BY id")
    assert turns == [("mcp", 1, 2000), ("mcp", 0, len(HR_QUESTION))]  # the 10 MB ask, cut; the abandoned one, done
