"""The outbox on SQLite and a real PostgreSQL server: one decision row per review item, one
announcement row per item and platform (queued with a held turn's item), one worker per try
(the lease), a failure handed back with its error and a back-off; the schema upgrade that
added the announcements keeps the decisions queued before it."""

from __future__ import annotations

import threading
import time

from sqlalchemy import text

from core.messages import ConversationKey, Decision, Source
from storage.records.outbox import ANNOUNCEMENT, DECISION, Outbox, Parcel
from storage.records.reviews import ReviewQueue
from storage.records.transcripts import SqlTranscriptStore
from tests.scenario.test_transcripts import decision

KEY = ConversationKey("slack", "C9", "171.5")


def held_item(store: SqlTranscriptStore) -> int:
    store.record_turn(KEY, "U1", "T1", decision("q"), "pending_review")
    [entry] = ReviewQueue(store.engine).entries()
    return entry.id


def test_one_worker_per_try_and_a_failure_is_retried_after_a_backoff(database_url: str) -> None:
    store = SqlTranscriptStore(database_url)
    item = held_item(store)
    outbox = Outbox(store.engine, lease_s=30, backoff_s=0.3)
    d = decision("q")
    d.sources = [Source(1, "docs/a.md", "c1", "A", "Intro", "docs/a.md", "", 0.8)]
    row = outbox.add(item, KEY, d.to_dict())
    assert outbox.add(item, KEY, d.to_dict()) == row and outbox.pending_count() == 1  # once per review item

    won: list[Parcel] = []
    workers = [threading.Thread(target=lambda n=n: won.extend(p for p in [outbox.claim(row, f"w{n}")] if p))
               for n in range(6)]
    for t in workers:
        t.start()
    for t in workers:
        t.join()
    assert len(won) == 1 and won[0].key == KEY and won[0].attempts == 1  # six tried at once, one got it
    first = won[0]
    assert Decision.from_dict(first.decision) == d  # what is delivered is the decision as it was decided
    assert outbox.due(["slack"]) == [] and outbox.claim(row, "late") is None  # leased
    assert not outbox.sent(row, "not-the-holder")
    holder = outbox.row(row).claimed_by  # type: ignore[union-attr]
    assert holder.startswith("w") and outbox.failed(row, holder, "ConnectionError: down", first.attempts)

    assert outbox.claim(row, "w9") is None  # backing off
    time.sleep(0.35)
    assert outbox.due(["slack"]) == [row] and outbox.due(["telegram"]) == []
    again = outbox.claim(row, "w9")
    assert again is not None and again.attempts == 2
    assert outbox.sent(row, "w9") and not outbox.sent(row, "w9")
    final = outbox.row(row)
    assert final is not None and final.status == "sent" and final.attempts == 2 and final.sent_at is not None
    assert final.last_error == "ConnectionError: down"  # kept for the record
    assert outbox.claim(row, "w1") is None and outbox.due(["slack"]) == [] and outbox.pending_count() == 0


def test_a_row_whose_worker_died_mid_try_is_taken_over_when_its_lease_runs_out(database_url: str) -> None:
    store = SqlTranscriptStore(database_url)
    item = held_item(store)
    outbox = Outbox(store.engine, lease_s=0.3)
    row = outbox.add(item, KEY, decision("q").to_dict())
    assert outbox.claim(row, "dead") is not None  # and never settles: its process was killed
    assert outbox.claim(row, "alive") is None and outbox.due(["slack"]) == []
    time.sleep(0.35)
    taken = outbox.claim(row, "alive")
    assert taken is not None and taken.attempts == 2
    assert not outbox.sent(row, "dead") and not outbox.failed(row, "dead", "late", 1)  # a late word changes nothing
    assert outbox.sent(row, "alive")
    final = outbox.row(row)
    assert final is not None and final.status == "sent" and final.attempts == 2


def test_a_held_turn_is_recorded_with_one_announcement_per_platform_and_each_is_queued_once(
        database_url: str) -> None:
    scopes_asked: list[str | None] = []
    store = SqlTranscriptStore(
        database_url, announce_to=lambda scope: scopes_asked.append(scope) or ["telegram", "slack", "telegram"])
    held = decision("q")
    held.scope = "hr"
    store.record_turn(KEY, "U1", "T1", held, "pending_review")
    store.record_turn(KEY, "U1", "T1", decision("answered"), "replied")  # not held: nobody is told
    [entry] = ReviewQueue(store.engine).entries()
    assert scopes_asked == ["hr"]
    outbox = Outbox(store.engine)
    rows = outbox.rows_of(entry.id)
    assert [(r.kind, r.platform, r.status, r.chat_id, r.decision) for r in rows] == [
        (ANNOUNCEMENT, "telegram", "pending", "", {}), (ANNOUNCEMENT, "slack", "pending", "", {})]
    assert outbox.announce(entry.id, ["slack", "telegram"]) == [rows[1].id, rows[0].id]  # queued already: no new rows
    decided = outbox.add(entry.id, KEY, decision("q").to_dict())  # the item's reviewed answer joins them
    assert outbox.add(entry.id, KEY, decision("q").to_dict()) == decided
    assert [r.kind for r in outbox.rows_of(entry.id)] == [ANNOUNCEMENT, ANNOUNCEMENT, DECISION]
    assert outbox.pending_count() == 1 and outbox.pending_count(ANNOUNCEMENT) == 2
    assert outbox.due(["slack"]) == [rows[1].id, decided] and outbox.due(["telegram"]) == [rows[0].id]

    parcel = outbox.claim(rows[1].id, "w1")
    assert parcel is not None and parcel.kind == ANNOUNCEMENT and parcel.key.platform == "slack"
    assert outbox.sent(rows[1].id, "w1")
    assert outbox.claim(rows[0].id, "w2") is not None and outbox.dropped(rows[0].id, "w2", "decided")
    assert outbox.due(["slack", "telegram"]) == [decided] and outbox.pending_count(ANNOUNCEMENT) == 0
    dropped = outbox.row(rows[0].id)
    assert dropped is not None and dropped.status == "dropped" and dropped.last_error == "decided"


def test_decisions_queued_before_the_announcements_upgrade_stay_queued(database_url: str) -> None:
    """Revision 0012 gives the outbox its kinds: a row from before is a decision, still pending,
    and still one per review item."""
    from storage.records.transcripts import migrate
    from tests.migrations import engine_at

    engine = engine_at(database_url, "0011")
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO conversation (key, platform, chat_id, thread_id, team_id, state, created_at, "
                          "updated_at) VALUES ('slack:C9:171.5', 'slack', 'C9', '171.5', '', 'pending_review', :t, :t)"),
                     {"t": "2026-01-01 00:00:00"})
        conn.execute(text(
            "INSERT INTO turn (conversation_id, platform, chat_id, thread_id, team_id, user_id, created_at, question, "
            "normalized_question, retrieval_query, answer, refused, refusal_reason, status, state, reasons, "
            "checks_passed, checks_failed, scores, llm_called, sources, uncovered_claims, latency_ms, "
            "latency_total_ms, index_version, config_hash, language, record) VALUES (1, 'slack', 'C9', '171.5', '', "
            "'U1', :t, 'q', 'q', 'q', '', false, '', 'PASS', 'pending_review', '[]', '[]', '[]', '{}', false, '[]', "
            "'[]', '{}', 1.0, '1', 'h', 'en', '{}')"), {"t": "2026-01-01 00:00:00"})
        conn.execute(text("INSERT INTO review_item (turn_id, origin, reason, comment, status, reviewer, final_answer, "
                          "created_at) VALUES (1, 'held', '', '', 'approved', 'console:local', 'a', :t)"),
                     {"t": "2026-01-01 00:00:00"})
        conn.execute(text("INSERT INTO outbox (item_id, platform, chat_id, thread_id, decision, status, attempts, "
                          "last_error, due_at, claimed_by, created_at) VALUES (1, 'slack', 'C9', '171.5', '{}', "
                          "'pending', 0, '', 0, '', :t)"), {"t": "2026-01-01 00:00:00"})
    migrate(engine)
    outbox = Outbox(engine)
    [old] = outbox.rows_of(1)
    assert (old.kind, old.status, old.chat_id) == (DECISION, "pending", "C9") and outbox.pending_count() == 1
    assert outbox.add(1, KEY, decision("q").to_dict()) == old.id  # still one decision per item
    assert outbox.announce(1, ["slack"]) != [old.id] and len(outbox.rows_of(1)) == 2
