"""SQLite transcripts: WAL, BEGIN IMMEDIATE, no lost updates under concurrent writers."""

from __future__ import annotations

import threading
from pathlib import Path

from sqlalchemy import text

from core.messages import ConversationKey, Decision, Suggestion
from storage.transcripts import SqlTranscriptStore


def decision(q: str) -> Decision:
    return Decision(question=q, normalized_question=q, retrieval_query=q, answer="a [C1]", refused=False,
                    refusal_reason="", refusal_message="", explanation="", status="PASS", state="replied", reasons=[],
                    checks_passed=[], checks_failed=[], scores={"top1_similarity": 0.9}, llm_called=False, sources=[],
                    suggestions=[Suggestion(0, "try this")], uncovered_claims=[], latency_ms={"total": 12.5},
                    index_version="3", config_hash="h", language="en")


def test_wal_mode_and_concurrent_writers_lose_nothing(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 't.db'}"
    stores = [SqlTranscriptStore(url) for _ in range(4)]
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


def test_suggestions_feedback_and_stats(tmp_path: Path) -> None:
    store = SqlTranscriptStore(f"sqlite:///{tmp_path / 't.db'}")
    key = ConversationKey("telegram", "42")
    turn_id, sugg = store.record_turn(key, "7", "", decision("q"), "replied")
    assert store.suggestion_text(sugg[0].id) == "try this" and store.suggestion_text(999) is None
    assert store.record_feedback(turn_id, "7", 1) and store.record_feedback(turn_id, "7", -1)
    assert [f.value for f in store.feedback_for(turn_id)] == [-1]  # a second vote replaces the first
    assert not store.record_feedback(12345, "7", 1)
    stats = store.stats()
    assert stats["turns"] == 1 and stats["feedback"] == {"up": 0, "down": 1} and stats["latency_ms"]["p50"] == 12.5
