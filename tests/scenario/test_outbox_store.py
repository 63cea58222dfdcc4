"""The outbox of reviewed decisions on SQLite and a real PostgreSQL server: one row per review
item, one worker per try (the lease), a failure handed back with its error and a back-off."""

from __future__ import annotations

import threading
import time

from core.messages import ConversationKey, Decision, Source
from storage.records.outbox import Outbox, Parcel
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
