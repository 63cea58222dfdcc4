"""`groundbot serve` as an operator runs it: `--workers 2` as a real subprocess on the real
PostgreSQL server (groundbot's supervisor, two spawned workers on one socket), one worker killed
with SIGKILL while questions arrive, and the JSON log line a turn leaves behind.
"""

from __future__ import annotations

import io
import json
import logging
import os
import re
import shutil
import signal
import subprocess
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import create_engine, text

from bot.app import App
from bot.logs.redact import install_redaction, uninstall_redaction
from bot.logs.setup import configure_logging
from core.messages import ConversationKey
from tests.ports import free_port
from tests.processes import serve_subprocess, worker_pids
from tests.scenario.test_serve import API_TOKEN, config_with, serving, worker
from tests.waits import WAIT_S, wait_until

pytestmark = pytest.mark.processes  # each test starts groundbot serve's supervisor

QUESTIONS = ["How do I re-ingest documents?", "What is the capital of Mongolia?", "How do I run groundbot as a web service?"]
START_S = max(WAIT_S, 300.0)  # two workers load their models at once on a busy 2-core machine


@contextmanager
def serve_process(tmp_path: Path, docs_index: Path, db_url: str, workers: int) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """`python -m bot.cli.main serve --workers N` over a copy of the docs index; stopped with SIGTERM."""
    data = tmp_path / "data"
    shutil.copytree(docs_index, data / "index")
    cfg = tmp_path / "config.toml"
    cfg.write_text(f'[paths]\ndata_dir = "{data.as_posix()}"\n[storage]\ndatabase_url = "{db_url}"\n'
                   "[serve]\nconversation_lease_s = 5.0\n", encoding="utf-8")
    port = free_port()
    env = {**os.environ, "GROUNDBOT_API_TOKEN": API_TOKEN}
    with serve_subprocess(cfg, port, workers, env, tmp_path / "serve.log") as proc:
        yield f"http://127.0.0.1:{port}", proc


def ready_workers(url: str, proc: subprocess.Popen[bytes], n: int) -> set[int]:
    """The supervisor's N workers, once /readyz has answered 200 from each (by the worker pid it reports)."""
    seen: set[int] = set()

    def check() -> set[int] | None:
        assert proc.poll() is None, f"groundbot serve exited with {proc.returncode}"
        try:
            r = httpx.get(url + "/readyz", timeout=5)
            if r.status_code == 200:
                seen.add(int(r.json()["pid"]))
        except httpx.TransportError:
            pass
        alive = worker_pids(proc.pid)
        return alive if len(alive) == n and alive <= seen else None

    return set(wait_until(check, START_S, interval=0.2, what=f"{n} ready workers"))


def ask(url: str, question: str, conversation: str) -> httpx.Response:
    return httpx.post(url + "/api/ask", json={"question": question, "conversation": conversation},
                      headers={"Authorization": f"Bearer {API_TOKEN}"}, timeout=WAIT_S)


def recorded_uids(db_url: str) -> list[str]:
    engine = create_engine(db_url)
    try:
        with engine.connect() as conn:
            return [str(r[0]) for r in conn.execute(text("SELECT uid FROM turn ORDER BY id"))]
    finally:
        engine.dispose()


def test_two_worker_processes_on_postgresql_a_killed_worker_is_replaced_and_nothing_recorded_twice(
        tmp_path: Path, docs_index: Path, postgres_server: Any) -> None:
    db_url = postgres_server.url()
    with serve_process(tmp_path, docs_index, db_url, workers=2) as (url, proc):
        first = ready_workers(url, proc, 2)
        answered: list[dict[str, Any]] = []
        failed: list[str] = []
        stop = threading.Event()

        def client(conv: str) -> None:  # questions keep coming while a worker dies
            i = 0
            while not stop.is_set():
                try:
                    r = ask(url, QUESTIONS[i % len(QUESTIONS)], conv)
                    answered.append(r.json()) if r.status_code == 200 else failed.append(str(r.status_code))
                except httpx.TransportError as exc:  # the request the killed worker held
                    failed.append(type(exc).__name__)
                i += 1

        clients = [threading.Thread(target=client, args=(f"conv-{n}",)) for n in range(3)]
        for c in clients:
            c.start()
        try:
            wait_until(lambda: len(answered) >= 4, START_S, interval=0.2, what="answers before the kill")
            victim = min(first)
            os.kill(victim, signal.SIGKILL)
            done_before = len(answered)
            replaced = ready_workers(url, proc, 2)  # the supervisor spawned a replacement, and it is ready
            assert victim not in replaced and len(replaced - first) == 1
            wait_until(lambda: len(answered) >= done_before + 4, START_S, interval=0.2, what="answers after the replacement")
        finally:
            stop.set()
            for c in clients:
                c.join(WAIT_S)
    assert proc.returncode == 0  # SIGTERM: the supervisor stopped its workers and exited cleanly
    uids = recorded_uids(db_url)
    assert len(uids) == len(set(uids))  # nothing recorded twice
    assert {a["turn_uid"] for a in answered} <= set(uids)  # every answer given is on record
    assert len(uids) - len(answered) <= len(failed)  # at most the killed requests were recorded unanswered


def test_a_turn_through_serve_logs_a_json_line_with_its_turn_uid_and_conversation(
        make_app: Callable[..., App], tmp_path: Path) -> None:
    root = logging.getLogger()
    saved = (list(root.handlers), root.level)
    stream = io.StringIO()
    configure_logging("json", "info", stream=stream)
    install_redaction({"GROUNDBOT_API_TOKEN": API_TOKEN})
    try:
        cfg = config_with({"GROUNDBOT_API_TOKEN": API_TOKEN})
        with serving(worker(make_app, cfg, f"sqlite:///{(tmp_path / 'log.db').as_posix()}")) as [server]:
            # the conversation name carries the API token: it must not reach the log as it is
            decision = server.ask("How do I re-ingest documents?", conversation=f"web-{API_TOKEN}").json()
    finally:
        uninstall_redaction()
        root.handlers[:] = saved[0]
        root.setLevel(saved[1])
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]  # every line is one JSON object
    [turn] = [e for e in lines if e.get("turn_uid") == decision["turn_uid"] and e["logger"] == "groundbot.turns"]
    key = ConversationKey("api", f"web-{API_TOKEN}").as_str()  # and the caller's namespace as its thread
    assert re.fullmatch(re.escape(key.replace(API_TOKEN, "[REDACTED:GROUNDBOT_API_TOKEN]")) + "[0-9a-f]{16}",
                        turn["conversation"])
    assert turn["message"] == "turn answered" and turn["level"] == "info" and turn["latency_ms"] > 0
    assert API_TOKEN not in stream.getvalue()
