"""A reviewed answer is not lost: it goes through the outbox (storage/records/outbox.py), sent by a
process connected to the user's platform and retried until sent, never twice. Over the real
python-telegram-bot Application and the Bot API stand-in."""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from adapters.console import ConsoleChat
from bot.app import App, build_app
from storage.records.outbox import DECISION, Outbox
from storage.records.tables import OutboxRow
from tests.scenario.test_review_console import HOLD_AT
from tests.scenario.test_review_telegram import held
from tests.scenario.test_telegram import ADMIN, running, standin, tg_app  # noqa: F401
from tests.standins.telegram import TelegramStandIn

pytestmark = pytest.mark.filterwarnings("ignore:.*retry_after.*:telegram.warnings.PTBDeprecationWarning")
FLOOD_S = 600  # a 429 asking to wait this long goes up at once (adapters/telegram/limits.py), a failed send


def outbox_app(tg_app: Callable[..., App], base_config: Any, retry_s: float = 0.2) -> App:  # noqa: F811
    review = replace(base_config.core.review, template_risk=HOLD_AT, hold_risk=HOLD_AT, retry_seconds=retry_s)
    return tg_app(review=review)


def decision_row(outbox: Outbox, item: int) -> OutboxRow:
    """The item's reviewed decision (its card's announcement to the admins is a row of its own)."""
    [row] = [r for r in outbox.rows_of(item) if r.kind == DECISION]
    return row


def answers(standin: TelegramStandIn, chat_id: int = 501) -> list[str]:  # noqa: F811
    return [c.params["text"] for c in standin.sent(chat_id) if c.params["text"].startswith("An admin reviewed")]


@pytest.mark.slow
async def test_a_delivery_that_fails_is_retried_until_sent_and_sent_once(tg_app: Callable[..., App],  # noqa: F811
                                                                       standin: TelegramStandIn,  # noqa: F811
                                                                       base_config: Any) -> None:
    app = outbox_app(tg_app, base_config)
    async with running(app):
        card, item = await held(app, standin)
        standin.fail_next("sendMessage", retry_after=FLOOD_S)  # the user's answer fails once
        standin.press(card.result, f"r:approve:{item}", user_id=ADMIN)
        told = await standin.wait_for(lambda: [c for c in standin.sent(ADMIN) if "approved" in c.params["text"]])
        assert "the user was not reached yet" in told[0].params["text"] and "retried until it is sent" in told[0].params["text"]
        await standin.wait_for(lambda: answers(standin))  # the courier's retry
        await standin.wait_for(lambda: app.courier.outbox.pending_count() == 0)
        for _ in range(3):  # more rounds of the retry thread send nothing again
            app.courier.flush()
    assert len(answers(standin)) == 1
    row = decision_row(app.courier.outbox, item)
    assert row.item_id == item and row.status == "sent" and row.attempts == 2
    assert "RetryAfter" in row.last_error or "Too Many Requests" in row.last_error
    assert row.chat_id == "501" and row.sent_at is not None


@pytest.mark.slow
async def test_an_admin_in_another_process_approves_and_the_connected_one_sends(tg_app: Callable[..., App],  # noqa: F811
                                                                                standin: TelegramStandIn,  # noqa: F811
                                                                                base_config: Any) -> None:
    app = outbox_app(tg_app, base_config)
    async with running(app):
        _, item = await held(app, standin)
        app.courier.stop()  # the connected groundbot does not look at the outbox until later
        # a console admin in a groundbot of its own on the same database: no Telegram connection there
        console_admin = app.config.changed(admins={**app.config.admins, "console": ("local",)})
        other = build_app(console_admin, embedder=app.embedder)
        out = io.StringIO()
        console = ConsoleChat(other, user_id="local", stdin=io.StringIO(""), stdout=out, session="admin")
        console.handle_line(f"/review approve {item}")
        assert f"#{item} approved" in out.getvalue()
        assert "no telegram connection runs in this process; a groundbot connected to telegram sends it" in out.getvalue()
        console.handle_line("/stats")
        assert "Review queue: 0 waiting; reviewed answers not sent yet: 1" in out.getvalue()
        assert not answers(standin)
        app.courier.start()
        [answer] = await standin.wait_for(lambda: answers(standin))
        await standin.wait_for(lambda: app.courier.outbox.pending_count() == 0)
        assert other.courier.flush() == 0 and app.courier.flush() == 0  # sent: nobody sends it again
        before = len(out.getvalue())
        console.handle_line("/stats")
        assert "Review queue: 0 waiting; reviewed answers not sent yet: 0" in out.getvalue()[before:]
    assert answer.startswith("An admin reviewed your question") and len(answers(standin)) == 1
    row = decision_row(Outbox(app.store.engine), item)
    assert row.status == "sent" and row.attempts == 1 and row.last_error == ""
