"""Transcripts on SQLite (WAL, BEGIN IMMEDIATE) and on a real PostgreSQL server: no lost updates
under concurrent writers, suggestions, feedback, stats, shared-state rows."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from sqlalchemy import text

from core.messages import ConversationKey, Decision, PriorTurn, Suggestion
from storage.records.reply_threads import ReplyThreads
from storage.records.shared_state import SharedState
from storage.records.spool import TurnSpool
from storage.records.transcripts import SqlTranscriptStore


def decision(q: str) -> Decision:
    return Decision(question=q, normalized_question=q, retrieval_query=q, answer="a [C1]", refused=False,
                    refusal_reason="", refusal_message="", explanation="", status="PASS", state="replied", reasons=[],
                    checks_passed=[], checks_failed=[], scores={"top1_similarity": 0.9}, llm_called=False, sources=[],
                    suggestions=[Suggestion(0, "try this")], uncovered_claims=[], latency_ms={"total": 12.5},
                    index_version="3", config_hash="h", language="en")


def test_concurrent_writers_lose_nothing(database_url: str) -> None:
    stores = [SqlTranscriptStore(database_url) for _ in range(4)]
    if database_url.startswith("sqlite"):
        with stores[0].engine.connect() as conn:
            assert conn.execute(text("PRAGMA journal_mode")).scalar() == "wal"
    key = ConversationKey("slack", "C1", "123.45")

    def writer(store: SqlTranscriptStore, n: int) -> None:
        for i in range(15):
            store.record_turn(key, f"u{n}", "T1", decision(f"q{n}-{i}"), "replied")

    threads = [threading.Thread(target=writer, args=(s, n)) for n, s in enumerate(stores)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    turns = stores[0].turns(limit=1000)
    assert len(turns) == 60 and len({t.conversation_id for t in turns}) == 1
    assert {t.team_id for t in turns} == {"T1"} and turns[0].thread_id == "123.45"
    state = stores[0].load_conversation(key, 2)
    assert state.state == "replied" and len(state.history) == 2


def test_suggestions_feedback_and_stats(database_url: str) -> None:
    store = SqlTranscriptStore(database_url)
    key = ConversationKey("telegram", "42")
    turn_id, sugg = store.record_turn(key, "7", "", decision("q"), "replied")
    assert store.suggestion_text(sugg[0].id) == "try this" and store.suggestion_text(999) is None
    assert store.record_feedback(turn_id, "7", 1) and store.record_feedback(turn_id, "7", -1)
    assert [f.value for f in store.feedback_for(turn_id)] == [-1]  # a second vote replaces the first
    assert not store.record_feedback(12345, "7", 1)
    stats = store.stats()
    assert stats["turns"] == 1 and stats["feedback"] == {"up": 0, "down": 1} and stats["latency_ms"]["p50"] == 12.5


def test_shared_state_rows_agree_across_workers(database_url: str) -> None:
    """Deliveries are taken once, leases exclude, rate limits and reply threads are shared."""
    stores = [SqlTranscriptStore(database_url) for _ in range(4)]
    states = [SharedState(s.engine, lease_s=30) for s in stores]
    taken: list[bool] = []

    def offer(state: SharedState) -> None:
        for i in range(10):
            taken.append(state.deliveries.first(f"slack:event:Ev{i}"))

    threads = [threading.Thread(target=offer, args=(s,)) for s in states]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert taken.count(True) == 10 and taken.count(False) == 30

    inside: list[int] = []
    overlaps: list[int] = []

    def turn(state: SharedState, n: int) -> None:
        for _ in range(5):
            with state.leases.conversation("telegram:501:"):
                inside.append(n)
                if len(inside) > 1:
                    overlaps.append(n)
                time.sleep(0.005)
                inside.remove(n)

    threads = [threading.Thread(target=turn, args=(s, n)) for n, s in enumerate(states)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert overlaps == [] and states[0].counts()["leases"] == 0

    assert [states[i % 4].rates.rate_wait_s("telegram:777", 3) for i in range(3)] == [0.0, 0.0, 0.0]
    assert states[3].rates.rate_wait_s("telegram:777", 3) > 50  # the fourth in a minute waits, on any worker
    states[0].threads.remember("telegram:-100:1001", "r7")
    assert states[2].threads.thread_of("telegram:-100:1001") == "r7"
    assert states[1].threads.thread_of("telegram:-100:9") is None


def test_decision_fields_are_json_columns_and_old_rows_convert(database_url: str) -> None:
    """Rows written as JSON text before revision 0004 read back as objects after the upgrade."""
    from storage.records.transcripts import migrate
    from tests.migrations import engine_at

    engine = engine_at(database_url, "0003")
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO conversation (key, platform, chat_id, thread_id, team_id, state, created_at, "
                          "updated_at) VALUES ('cli:old:', 'cli', 'old', '', '', 'replied', :t, :t)"),
                     {"t": "2026-01-01 00:00:00"})
        conn.execute(text(
            "INSERT INTO turn (conversation_id, platform, chat_id, thread_id, team_id, user_id, created_at, question, "
            "normalized_question, retrieval_query, answer, refused, refusal_reason, status, state, reasons, "
            "checks_passed, checks_failed, scores, llm_called, sources, uncovered_claims, latency_ms, "
            "latency_total_ms, index_version, config_hash, language, record) VALUES (1, 'cli', 'old', '', '', 'u', :t, "
            "'q', 'q', 'q', 'a', false, '', 'PASS', 'replied', '[\"X\"]', '[]', '[]', '{\"top1_similarity\": 0.5}', "
            "false, '[]', '[]', '{\"total\": 3.0}', 3.0, '1', 'h', 'fa', '{\"question\": \"\u06a9\u062a\u0627\u0628\"}')"),
            {"t": "2026-01-01 00:00:00"})
    migrate(engine)
    store = SqlTranscriptStore(database_url)
    store.record_turn(ConversationKey("cli", "new"), "u", "", decision("\u06a9\u062a\u0627\u0628\u062e\u0627\u0646\u0647 \u06a9\u062c\u0627\u0633\u062a\u061f"), "replied")
    old, new = store.turns()
    assert old.reasons == ["X"] and old.scores == {"top1_similarity": 0.5} and old.record["question"] == "\u06a9\u062a\u0627\u0628"
    assert new.scores == {"top1_similarity": 0.9} and new.latency_ms == {"total": 12.5}
    assert new.record["question"].startswith("\u06a9\u062a\u0627\u0628") and new.record["turn_id"] == new.id
    if database_url.startswith("postgresql"):
        with engine.connect() as conn:
            assert conn.execute(text("SELECT pg_typeof(record)::text FROM turn LIMIT 1")).scalar() == "jsonb"
            assert conn.execute(text("SELECT count(*) FROM turn WHERE scores->>'top1_similarity' IS NOT NULL")).scalar() == 2


def test_a_turn_reads_and_writes_its_conversation_as_one_unit(database_url: str, tmp_path: Path) -> None:
    """begin_turn gives the conversation as the turn found it and records the turn with the new
    state; a database that cannot be read gives found=None instead of an error, and the turn
    is still kept (in the spool)."""
    store = SqlTranscriptStore(database_url)
    key = ConversationKey("telegram", "77", "t1")
    with store.begin_turn(key, 2) as conversation:
        assert conversation.found is not None and (conversation.found.state, conversation.found.history) == ("idle", [])
        turn_id, _ = conversation.record("u", "", decision("first"), "awaiting_clarification")
    with store.begin_turn(key, 2) as conversation:
        assert conversation.found is not None and conversation.found.state == "awaiting_clarification"
        assert conversation.found.history == [PriorTurn("first", "a [C1]")] and turn_id is not None
    missing = SqlTranscriptStore(f"sqlite:///{(tmp_path / 'no-such-dir' / 't.db').as_posix()}",
                                 spool=TurnSpool(tmp_path / "spool.jsonl"), lock_budget_s=0.2)
    with missing.begin_turn(key, 2) as conversation:
        assert conversation.found is None
        assert conversation.record("u", "", decision("second"), "replied")[0] is None
    assert missing.pending_spooled() == 1


@pytest.mark.slow
def test_delivery_claims_are_taken_over_only_from_a_worker_that_stopped_renewing(database_url: str) -> None:
    """A claim is answered by its holder while it renews it; once it stops (killed), one other
    worker takes it over, with its payload; a done delivery is never answered again."""
    engine = SqlTranscriptStore(database_url).engine
    a, b, c = (SharedState(engine, stale_s=0.6, max_attempts=2) for _ in range(3))
    update = {"update_id": 5, "message": {"text": "q"}}
    assert a.deliveries.claim("telegram:1:update:5", update) == "new"
    assert b.deliveries.claim("telegram:1:update:5", update) == "busy"  # A is answering it
    time.sleep(0.4)
    a.renew()  # A's heartbeat: alive
    time.sleep(0.4)
    assert b.deliveries.claim("telegram:1:update:5") == "busy" and b.deliveries.abandoned(margin_s=0.0) == []
    time.sleep(0.7)  # A was SIGKILLed: no more renewals
    assert b.deliveries.abandoned(margin_s=0.0) == [("telegram:1:update:5", update)]
    taken = [s.deliveries.claim("telegram:1:update:5") for s in (b, c)]
    assert sorted(taken) == ["busy", "taken"]  # one worker wins
    a.deliveries.claim("slack:event:Ev1", {"event_id": "Ev1"})
    a.deliveries.done("slack:event:Ev1")
    time.sleep(0.7)
    assert b.deliveries.claim("slack:event:Ev1") == "done" and b.deliveries.claims() == {"claimed": 1, "done": 1}
    time.sleep(0.7)  # the taker died too: that was the last attempt, the delivery is given up
    assert c.deliveries.abandoned(margin_s=0.0) == [] and c.deliveries.claims() == {"failed": 1, "done": 1}
    a.deliveries.claim("slack:event:Ev2", {"event_id": "Ev2"})
    a.start_heartbeat(every_s=0.1)  # a live worker on its own connection: its claim never goes stale
    try:
        time.sleep(1.2)
        assert b.deliveries.claim("slack:event:Ev2") == "busy" and b.deliveries.abandoned(margin_s=0.0) == []
    finally:
        a.stop_heartbeat()


def test_a_reply_sent_after_a_recorded_turn_is_seen_by_the_worker_taking_over(database_url: str) -> None:
    """The reply-thread row written after each send tells a taker that the dead worker's reply went out."""
    store = SqlTranscriptStore(database_url)
    threads = ReplyThreads(store.engine)
    d = decision("q")
    d.turn_uid = "5" * 32
    assert not threads.replied_after_turn(d.turn_uid, "telegram:42:")  # not even recorded
    threads.remember("telegram:42:900", "")  # the previous turn's reply
    store.record_turn(ConversationKey("telegram", "42"), "7", "", d, "replied")
    threads.remember("telegram:420:901", "")  # a reply in another chat
    assert not threads.replied_after_turn(d.turn_uid, "telegram:42:")  # recorded, its reply not sent
    threads.remember("telegram:42:902", "")
    assert threads.replied_after_turn(d.turn_uid, "telegram:42:")


def test_stats_percentiles_interpolate_between_the_rows_around_them(database_url: str) -> None:
    """p50 and p95 as linear interpolation over the sorted latencies (numpy's default), read
    from the database in latency order rather than by loading every turn."""
    import numpy as np

    store = SqlTranscriptStore(database_url)
    latencies = [float(x) for x in (250, 3, 40, 41.5, 7, 1200, 18, 18, 90, 5, 33)]
    for i, ms in enumerate(latencies):
        d = decision(f"q{i}")
        d.latency_ms = {"total": ms}
        store.record_turn(ConversationKey("console", f"c{i}"), "7", "", d, "replied")
    got = store.stats()["latency_ms"]
    assert got == {"p50": round(float(np.percentile(latencies, 50)), 1), "p95": round(float(np.percentile(latencies, 95)), 1)}
