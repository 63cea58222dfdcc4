"""A new review item's card reaches the admins through the outbox, after the turn: the user is
answered whatever the admins' platform does, a card that failed is retried until it is sent,
each platform is told once, by a process that runs it. The real App on a real SQLite database;
the admins' platforms are fakes at the Delivery port."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from bot.app import App, build_app
from core.admin_replies import Reply
from core.messages import ConversationKey, Decision, Incoming
from storage.records.outbox import ANNOUNCEMENT
from tests.scenario.test_review_console import HOLD_AT, RISKY, Console

BACKOFF_S = 0.1  # the courier's shortest back-off (bot/app.py)


class Admins:
    """A platform's Delivery port as its admins see it: the cards posted to them, and a platform
    that is down for its next `failing` posts."""

    def __init__(self, failing: int = 0) -> None:
        self.failing = failing
        self.tries = 0
        self.cards: list[tuple[str, list[str]]] = []

    def deliver(self, key: ConversationKey, decision: Decision) -> None:
        raise AssertionError("no reviewed answer goes to this platform here")

    def notify(self, reply: Reply, users: Sequence[str] = ()) -> None:
        self.tries += 1
        if self.failing:
            self.failing -= 1
            raise ConnectionError("the admins' platform is down")
        self.cards.append((reply.text, list(users)))


def announcing_app(make_app: Callable[..., App], base_config: Any, **fields: Any) -> App:
    """Risky answers held; Telegram has an admin; no retry thread (the test flushes the courier)."""
    review = replace(base_config.core.review, template_risk=HOLD_AT, hold_risk=HOLD_AT, retry_seconds=0)
    return make_app(config=base_config.changed(review=review),
                    admins={"console": ("local",), "telegram": ("111",)}, **fields)


def held_item(app: App, user: Console) -> int:
    told = user(RISKY)
    assert "passed to an admin for review" in told  # the user's answer, whatever the admins' platform does
    [entry] = app.desk.queue.entries()
    return entry.id


def test_the_user_is_answered_while_the_admins_platform_is_down_and_the_card_follows(
        make_app: Callable[..., App], base_config: Any) -> None:
    app = announcing_app(make_app, base_config)
    telegram = Admins(failing=1)
    app.register_delivery("telegram", telegram)
    user = Console(app, "guest", "chat-7")
    item = held_item(app, user)
    assert telegram.tries == 0  # nothing was posted to the admins inside the turn
    assert "announce" not in app.hooks.turn
    [row] = app.courier.outbox.rows_of(item)
    assert (row.kind, row.platform, row.status, row.attempts) == (ANNOUNCEMENT, "telegram", "pending", 0)

    assert app.courier.flush() == 0 and telegram.tries == 1  # down: the try is recorded on the row
    failed = app.courier.outbox.row(row.id)
    assert failed is not None and failed.status == "pending" and "ConnectionError" in failed.last_error
    assert app.courier.flush() == 0 and telegram.tries == 1  # backing off
    time.sleep(BACKOFF_S * 1.5)
    assert app.courier.flush() == 1
    [(card, users)] = telegram.cards
    assert f"Held for review: #{item} (console" in card and RISKY in card and users == []

    for _ in range(2):  # later rounds send nothing again
        assert app.courier.flush() == 0
    app.desk.announce(app.desk.queue.entries()[0].turn_id)  # asked for again (a user flags the turn): queued once
    assert app.courier.flush() == 0 and len(telegram.cards) == 1 and telegram.tries == 2
    [sent] = app.courier.outbox.rows_of(item)
    assert sent.status == "sent" and sent.attempts == 2 and sent.sent_at is not None
    assert app.stats()["outbox_pending"] == 0  # counts reviewed answers; the card is not one


def test_each_platform_is_told_once_by_a_process_that_runs_it(make_app: Callable[..., App],
                                                              base_config: Any) -> None:
    app = announcing_app(make_app, base_config, slack=replace(base_config.slack, admin_channel="C0ADMINS"))
    telegram = Admins()
    app.register_delivery("telegram", telegram)  # this process runs Telegram, not Slack
    item = held_item(app, Console(app, "guest", "chat-7"))
    assert sorted(r.platform for r in app.courier.outbox.rows_of(item)) == ["slack", "telegram"]
    assert app.courier.flush() == 1 and len(telegram.cards) == 1
    [waiting] = [r for r in app.courier.outbox.rows_of(item) if r.status == "pending"]
    assert waiting.platform == "slack" and waiting.attempts == 0  # not tried where Slack does not run

    other = build_app(app.config, embedder=app.embedder)  # a groundbot running Slack, on the same database
    slack = Admins()
    other.register_delivery("slack", slack)
    assert other.courier.flush() == 1
    [(card, users)] = slack.cards
    assert f"Held for review: #{item} (console" in card and users == []
    assert app.courier.flush() == 0 and other.courier.flush() == 0 and len(telegram.cards) == 1
    assert {r.status for r in app.courier.outbox.rows_of(item)} == {"sent"}


def test_an_item_decided_before_its_card_went_out_is_not_announced(make_app: Callable[..., App],
                                                                   base_config: Any) -> None:
    app = announcing_app(make_app, base_config)  # no Telegram here: its card waits for a process that runs it
    admin = Console(app, "local", "admin")
    user = Console(app, "guest", "chat-7")
    item = held_item(app, user)
    assert f"#{item} approved" in admin(f"/review approve {item}")
    assert "An admin reviewed your question" in user.out.getvalue()

    other = build_app(app.config, embedder=app.embedder)
    telegram = Admins()
    other.register_delivery("telegram", telegram)
    assert other.courier.flush() == 0 and telegram.tries == 0
    [row] = [r for r in other.courier.outbox.rows_of(item) if r.kind == ANNOUNCEMENT]
    assert row.status == "dropped" and "decided" in row.last_error


def test_a_flagged_answer_is_announced_through_the_outbox(make_app: Callable[..., App], base_config: Any) -> None:
    review = replace(base_config.core.review, retry_seconds=0)
    app = make_app(config=base_config.changed(review=review),
                   admins={"console": ("local",), "telegram": ("111",)})
    telegram = Admins(failing=1)
    app.register_delivery("telegram", telegram)
    user = Console(app, "guest", "c1")
    user("How do I re-ingest documents?")
    assert "an admin will look at it" in user("/bad wrong it skips PDFs")  # told at once, though Telegram is down
    [entry] = app.desk.queue.entries()
    assert entry.origin == "feedback" and telegram.tries == 0  # queued; the courier posts it
    assert app.courier.flush() == 0 and telegram.tries == 1
    time.sleep(BACKOFF_S * 1.5)
    assert app.courier.flush() == 1
    [(card, _)] = telegram.cards
    assert f"A user flagged #{entry.id} (console): wrong" in card
    [row] = app.courier.outbox.rows_of(entry.id)
    assert row.kind == ANNOUNCEMENT and row.status == "sent" and row.attempts == 2


def test_a_held_turn_replayed_from_the_spool_at_start_up_is_announced(make_app: Callable[..., App],
                                                                       base_config: Any) -> None:
    """The store is built with the config's review audience, so the turns build_app replays
    before anything else is built are announced like any held turn."""
    app = announcing_app(make_app, base_config)
    held = app.ask(Incoming(ConversationKey("console", "chat-9"), "guest", RISKY))
    assert held.held and app.store.spool is not None
    app.store.spool.append({"uid": "spooled-held", "key": ["console", "chat-9", ""], "user_id": "guest",
                            "team_id": "", "new_state": "pending_review",
                            "created_at": "2026-01-01T00:00:00+00:00", "record": held.to_dict()})

    other = build_app(app.config, embedder=app.embedder)  # replays the spool while it starts
    assert other.store.pending_spooled() == 0
    spooled = max(e.id for e in other.desk.queue.entries())
    assert [(r.kind, r.platform) for r in other.courier.outbox.rows_of(spooled)] == [(ANNOUNCEMENT, "telegram")]
    telegram = Admins()
    other.register_delivery("telegram", telegram)
    assert other.courier.flush() == 2 and len(telegram.cards) == 2  # the live turn's card and the replayed one's
