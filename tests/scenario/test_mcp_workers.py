"""`groundbot serve --workers 2` serving MCP: the SDK's session manager runs stateless, so one
client's session (its `initialize`, then every call) is answered by whichever worker takes each
connection, and a conversation it continues is one conversation across both. Real subprocesses on
the real PostgreSQL server; each call comes on a new connection, as behind a load balancer."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from sqlalchemy import create_engine, text

from bot.app import build_app
from bot.config import load_config
from tests.processes import serve_subprocess
from tests.scenario.scoped_kb import HR_QUESTION, HR_WORDS, write_kb
from tests.scenario.test_mcp import ENG_MARKS, TOKENS, config_text, dumped, leaks
from tests.scenario.test_serve_workers import ready_workers
from tests.waits import WAIT_S

pytestmark = pytest.mark.processes

FOLLOW_UPS = ["And can it be taken in several blocks?", "How do I request annual leave?", HR_QUESTION]


def turn_pids(log: Path) -> dict[str, int]:
    """turn uid -> the worker process that logged the turn (the JSON lines of both workers)."""
    out = {}
    for line in log.read_text(encoding="utf-8").splitlines():
        if line.startswith("{") and ('"turn answered"' in line or '"turn refused"' in line):
            try:
                entry = json.loads(line)
            except ValueError:  # the last line, still being written
                continue
            out[entry["turn_uid"]] = int(entry["process"])
    return out


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_two_workers_serve_one_clients_calls_and_its_conversation(tmp_path: Path, postgres_server: Any,
                                                                        embedder: Any, free_port: int, mode: str) -> None:
    db_url = postgres_server.url()
    kb = write_kb(tmp_path)
    cfg = tmp_path / "config.toml"
    cfg.write_text(config_text(tmp_path, kb).replace(f"sqlite:///{(tmp_path / 'records.db').as_posix()}", db_url),
                   encoding="utf-8")
    app = build_app(load_config(cfg, environ={}), embedder=embedder)
    assert len(app.ingest().added) == 3
    app.store.engine.dispose()
    url, log = f"http://127.0.0.1:{free_port}", tmp_path / "serve.log"
    with serve_subprocess(cfg, free_port, 2, {**os.environ, **TOKENS}, log) as proc:
        workers = ready_workers(url, proc, 2)
        headers = {"Authorization": f"Bearer {TOKENS['HR_API_TOKEN']}", "Connection": "close"}
        results = []
        async with httpx2.AsyncClient(headers=headers, timeout=WAIT_S) as http, \
                Client(streamable_http_client(url + "/mcp", http_client=http), mode=mode) as client:
            first = await client.call_tool("ask", {"question": HR_QUESTION})
            assert first.structured_content and first.structured_content["answered"], dumped(first)
            conversation = first.structured_content["conversation"]
            results.append(first)
            for n in range(40):  # until both workers have answered a call (each a new connection)
                asked = await client.call_tool("ask", {"question": FOLLOW_UPS[n % 3], "conversation": conversation})
                results.append(asked)
                pids = turn_pids(log)
                if len({pids.get(r.structured_content["turn"]) for r in results if r.structured_content} - {None}) > 1:
                    break
            searched = await client.call_tool("search", {"query": HR_QUESTION})
    pids = turn_pids(log)
    served_by = {pids[r.structured_content["turn"]] for r in results if r.structured_content}
    assert served_by == workers, (served_by, workers)  # both workers answered calls of one client
    assert "three blocks" in (results[1].structured_content or {})["answer"]  # the follow-up read its conversation
    assert all(r.structured_content and r.structured_content["scope"] == "hr" for r in results)
    assert searched.structured_content and HR_WORDS in searched.structured_content["passages"][0]["text"]
    assert not leaks("".join(dumped(r) for r in [*results, searched]), ENG_MARKS)
    engine = create_engine(db_url)
    try:
        with engine.connect() as conn:
            turns = conn.execute(text("SELECT DISTINCT platform, chat_id, conversation_id FROM turn")).all()
    finally:
        engine.dispose()
    assert len(turns) == 1 and turns[0][:2] == ("mcp", conversation)  # one conversation, whichever worker answered
