"""No turn is lost and nobody is told a turn was recorded when it was not: a read-only, a
locked, an unreachable transcript database, an unwritable spool, and stdin that is not UTF-8.

Everything here is real: SQLite files on disk, a second connection holding the lock, the
`groundbot` CLI in a subprocess.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from core import reasons
from core.messages import ConversationKey, Incoming
from storage.records.transcripts import SqlTranscriptStore

ROOT = Path(__file__).resolve().parents[2]
QUESTIONS = ["How do I re-ingest documents?", "What is the capital of Mars?", "Which file types can groundbot ingest?"]


@pytest.fixture
def data_dir(tmp_path: Path, docs_index: Path) -> Path:
    shutil.copytree(docs_index, tmp_path / "data" / "index")
    return tmp_path / "data"


def groundbot(*args: str, data_dir: Path, config: Path | None = None, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    cfg = ["--config", str(config)] if config else []
    return subprocess.run([sys.executable, "-m", "bot.cli.main", *cfg, "--data-dir", str(data_dir), *args], input=stdin,
                          capture_output=True, cwd=ROOT, timeout=600, env={**os.environ, "HF_HUB_OFFLINE": "1"})


def storage_config(tmp_path: Path, url: str, budget: float = 1.0) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(f'[storage]\ndatabase_url = "{url}"\nlock_budget_s = {budget}\n')
    return path


def turn_count(db: Path) -> int:
    with sqlite3.connect(db) as conn:
        return int(conn.execute("select count(*) from turn").fetchone()[0])


@pytest.mark.slow
def test_read_only_database_answers_spools_and_replays(tmp_path: Path, data_dir: Path) -> None:
    db = data_dir / "transcripts.db"
    first = groundbot("ask", "How do I re-ingest documents?", data_dir=data_dir)
    assert first.returncode == 0 and turn_count(db) == 1

    read_only = storage_config(tmp_path, f"sqlite:///file:{db.as_posix()}?mode=ro&uri=true")
    out = groundbot("ask", "-", "--json", data_dir=data_dir, config=read_only, stdin="\n".join(QUESTIONS).encode() + b"\n")
    assert out.returncode == 0, out.stderr.decode()
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    assert len(rows) == 3 and not rows[0]["refused"] and rows[1]["refused"]
    assert [r["recorded"] for r in rows] == ["spool"] * 3 and all(r["turn_id"] is None for r in rows)
    assert turn_count(db) == 1  # nothing reached the database ...
    spool = data_dir / "spool" / "turns.jsonl"
    assert len(spool.read_text().splitlines()) == 3  # ... and all three wait in the spool

    doctor = groundbot("doctor", "--json", data_dir=data_dir, config=read_only)
    report = json.loads(doctor.stdout)
    assert doctor.returncode == 1 and report["spooled_turns"] == 3 and not report["database_writable"]

    replay = groundbot("doctor", "--replay", "--json", data_dir=data_dir)
    report = json.loads(replay.stdout)
    assert replay.returncode == 0 and report["replayed"] == 3 and report["spooled_turns"] == 0
    assert turn_count(db) == 4  # counts equal: 1 + 3, none twice
    with sqlite3.connect(db) as conn:
        stored = [json.loads(r[0]) for r in conn.execute("select record from turn order by id")]
    assert [s["question"] for s in stored[1:]] == QUESTIONS
    assert [s["recorded"] for s in stored] == ["database", "spool", "spool", "spool"]
    assert groundbot("doctor", "--replay", data_dir=data_dir).returncode == 0 and turn_count(db) == 4


@pytest.mark.slow
def test_lock_held_40_s_loses_no_turn(make_app: Callable[..., Any]) -> None:
    """Another process holds the write lock for 40 s (longer than the 10 s budget): the turns
    are answered, spooled, and replayed in order by the first turn after the lock is gone."""
    app = make_app()
    key = ConversationKey("test", "locked")
    app.ask(Incoming(key, "u", "How do I re-ingest documents?"))
    db = app.config.paths.data_dir / "transcripts.db"
    held, release = threading.Event(), threading.Event()

    def hold_lock() -> None:
        conn = sqlite3.connect(db, isolation_level=None)
        conn.execute("BEGIN EXCLUSIVE")
        held.set()
        release.wait(40)
        conn.execute("ROLLBACK")
        conn.close()

    locker = threading.Thread(target=hold_lock, daemon=True)
    started = time.monotonic()
    locker.start()
    assert held.wait(30)
    during = [app.ask(Incoming(key, "u", q)) for q in ("Which file types can groundbot ingest?", "And PDF?")]
    assert all(d.recorded == "spool" and d.turn_id is None for d in during)
    assert not during[0].refused
    assert during[1].history == "loaded"  # reads do not wait for the write lock (WAL)
    release.wait(max(0.0, 40 - (time.monotonic() - started)))
    release.set()
    locker.join(10)
    after = app.ask(Incoming(key, "u", "What does a refusal mean?"))
    assert after.recorded == "database" and after.turn_id is not None
    questions = [t.question for t in app.store.turns() if t.chat_id == "locked"]
    assert questions == ["How do I re-ingest documents?", "Which file types can groundbot ingest?", "And PDF?",
                         "What does a refusal mean?"]
    assert app.store.pending_spooled() == 0


@pytest.mark.slow
def test_unreachable_database_runs_without_history_and_says_so(make_app: Callable[..., Any], tmp_path: Path) -> None:
    app = make_app(storage__database_url=f"sqlite:///{(tmp_path / 'no-such-dir' / 't.db').as_posix()}", storage__lock_budget_s=0.5)
    d = app.ask(Incoming(ConversationKey("test", "x"), "u", "How do I re-ingest documents?"))
    assert not d.refused and d.history == "unavailable" and d.recorded == "spool"
    (tmp_path / "no-such-dir").mkdir()
    assert app.store.replay_spool().replayed == 1
    [row] = app.store.turns()
    assert row.record["history"] == "unavailable"


@pytest.mark.slow
def test_unwritable_spool_and_database_exit_non_zero(tmp_path: Path, data_dir: Path) -> None:
    (data_dir / "spool" / "turns.jsonl").mkdir(parents=True)  # the spool cannot be a file
    cfg = storage_config(tmp_path, f"sqlite:///{(tmp_path / 'no-such-dir' / 't.db').as_posix()}", budget=0.3)
    out = groundbot("ask", "How do I re-ingest documents?", "--json", data_dir=data_dir, config=cfg)
    assert out.returncode == 3
    assert json.loads(out.stdout)["recorded"] == ""
    assert b"NOT recorded" in out.stderr


@pytest.mark.slow
def test_a_line_that_is_not_utf8_is_rejected_alone(data_dir: Path) -> None:
    out = groundbot("ask", "-", "--json", data_dir=data_dir,
                    stdin=b"How do I re-ingest documents?\n\xff\xfe bad\nWhich file types can groundbot ingest?")
    assert out.returncode == 0, out.stderr.decode()
    first, bad, last = (json.loads(line) for line in out.stdout.splitlines())
    assert not first["refused"] and not last["refused"]
    assert bad["refused"] and bad["refusal_reason"] == reasons.INPUT_REJECTED and "UTF-8" in bad["explanation"] and "byte" in bad["detail"]
    assert all(r["recorded"] == "database" for r in (first, bad, last))
    assert turn_count(data_dir / "transcripts.db") == 3


@pytest.mark.slow
@pytest.mark.parametrize("args", [["--", "-rf: what does it mean?"], ["-q=-rf: what does it mean?"]])
def test_a_question_may_start_with_a_dash(data_dir: Path, args: list[str]) -> None:
    out = groundbot("ask", *args, "--json", data_dir=data_dir) if args[0] != "--" else \
        groundbot("ask", "--json", *args, data_dir=data_dir)
    assert out.returncode == 0, out.stderr.decode()
    assert json.loads(out.stdout)["question"] == "-rf: what does it mean?"


def test_store_replays_spool_exactly_once_after_a_crash(tmp_path: Path, make_app: Callable[..., Any]) -> None:
    """A replay that committed turns but died before rewriting the spool must not record them twice."""
    app = make_app()
    store: SqlTranscriptStore = app.store
    d = app.ask(Incoming(ConversationKey("test", "c"), "u", "How do I re-ingest documents?"))
    assert d.recorded == "database"
    assert store.spool is not None
    entry = {"uid": d.turn_uid, "key": ["test", "c", ""], "user_id": "u", "team_id": "", "new_state": "replied",
             "created_at": "2026-01-01T00:00:00+00:00", "record": d.to_dict()}
    store.spool.append(entry)  # as if the crash left it behind after the database took it
    assert store.replay_spool().replayed == 1
    assert len(store.turns()) == 1 and store.pending_spooled() == 0
