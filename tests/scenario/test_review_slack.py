"""The review loop on Slack, through slack-bolt and the Web API stand-in: a held draft, its card
with buttons in the admin channel, the admin's decision (the edit in a modal), and the user's
answer in the original thread."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest

from tests.scenario.test_slack import (  # noqa: F401
    ADMIN,
    CHANNEL,
    PARKING,
    USER,
    Slack,
    blocks_text,
    buttons,
    context_text,
    kb_index,
    standin,
    start,
)
from tests.standins.slack import Call

ADMIN_CHANNEL = "C0ADMINS"
RISKY = "When does the library open?"  # risk 0.2015 with the passage reader: held at 0.2; a reviewed FAQ answer is below it


def held(start: Callable[..., Slack], mode: str = "http", ts: str = "1801.000100") -> tuple[Slack, Call, int]:  # noqa: F811
    bot = start(mode, hold_risk=0.2, admin_channel=ADMIN_CHANNEL)
    bot.mention(RISKY, ts=ts)
    posted = bot.replies(2)
    told = next(c for c in posted if c.args["channel"] == CHANNEL)
    card = next(c for c in posted if c.args["channel"] == ADMIN_CHANNEL)
    assert told.args["thread_ts"] == ts and blocks_text(told).startswith("Your question has been passed to an admin")
    assert not buttons(told)  # held: nothing to rate or flag yet
    item = int(re.search(r"Held for review: #(\d+) \(slack", blocks_text(card)).group(1))  # type: ignore[union-attr]
    return bot, card, item


def to_thread(bot: Slack, ts: str, count: int) -> list[Call]:
    bot.replies(count)
    return [c for c in bot.api.requests("chat.postMessage") if c.args["channel"] == CHANNEL and c.args.get("thread_ts") == ts]


@pytest.mark.parametrize("mode", ["socket", "http"])
def test_admin_approves_from_the_admin_channel_and_the_thread_gets_the_answer(start: Callable[..., Slack],  # noqa: F811
                                                                              mode: str) -> None:
    bot, card, item = held(start, mode)
    text = blocks_text(card)
    assert f"Question (slack, user {USER}): {RISKY}" in text and "Draft: " in text and "support_margin" in text
    assert [b["action_id"] for b in buttons(card)] == ["groundbot_review_approve", "groundbot_review_edit",
                                                       "groundbot_review_reject", "groundbot_review_faq"]
    bot.click(card, "groundbot_review_approve", user=USER)  # not an admin: refused privately, nothing changes
    (denied,) = bot.api.wait_for("chat.postEphemeral")
    assert denied.args["user"] == USER and denied.args["text"] == "Sorry, only admins can use the review queue."
    bot.settle()
    assert bot.app.desk.queue.entry(item).status == "open"  # type: ignore[union-attr]

    bot.click(card, "groundbot_review_approve", user=ADMIN)
    answer = to_thread(bot, "1801.000100", 3)[-1]
    assert blocks_text(answer).startswith(f"An admin reviewed your question “{RISKY}”:")
    assert "opens at 9 in the morning" in blocks_text(answer) and "Riverside Library handbook" in blocks_text(answer)
    done = bot.api.wait_for("chat.postEphemeral", 2)[-1]
    assert (done.args["user"], done.args["text"]) == (ADMIN, f"#{item} approved; the answer went to the user.")


def test_edit_in_a_modal_then_approve(start: Callable[..., Slack]) -> None:  # noqa: F811
    bot, card, item = held(start)
    bot.click(card, "groundbot_review_edit", user=ADMIN)
    (modal,) = bot.api.wait_for("views.open")
    view = modal.args["view"]
    assert view["callback_id"] == "groundbot_review_edit" and view["private_metadata"] == str(item)
    assert "opens at 9 in the morning" in view["blocks"][0]["element"]["initial_value"]
    assert "[C1]" not in view["blocks"][0]["element"]["initial_value"]
    bot.submit(modal, {"answer": "Weekdays 9 to 20, Saturdays 9 to 17, closed on Sundays."}, user=ADMIN)
    answer = to_thread(bot, "1801.000100", 4)[-1]
    assert "Weekdays 9 to 20, Saturdays 9 to 17" in blocks_text(answer)
    confirmation = [c for c in bot.api.requests("chat.postMessage") if c.args["channel"] == ADMIN]
    assert confirmation and confirmation[-1].args["text"] == f"#{item} edited and approved; the answer went to the user."


def test_reject_posts_the_refusal_with_suggestions_in_the_thread(start: Callable[..., Slack]) -> None:  # noqa: F811
    bot, card, item = held(start)
    bot.click(card, "groundbot_review_reject", user=ADMIN)
    refusal = to_thread(bot, "1801.000100", 3)[-1]
    assert blocks_text(refusal).startswith(bot.app.config.core.refusal.messages["en"])
    assert "`REVIEW_REJECTED`" in context_text(refusal)
    assert [b for b in buttons(refusal) if b["action_id"].startswith("groundbot_suggest_")]


def test_approve_as_faq_then_the_same_question_is_answered_from_it(start: Callable[..., Slack]) -> None:  # noqa: F811
    bot, card, item = held(start)
    bot.click(card, "groundbot_review_faq", user=ADMIN)
    to_thread(bot, "1801.000100", 3)
    bot.settle()
    bot.mention(RISKY, ts="1802.000100")
    again = to_thread(bot, "1802.000100", 4)[-1]
    assert "opens at 9 in the morning" in blocks_text(again) and f"reviewed by slack {ADMIN}" in blocks_text(again)
    last = bot.app.store.turns()[-1]
    assert last.state == "replied" and last.record["route"] == "reply"
    assert len([c for c in bot.api.requests("chat.postMessage") if c.args["channel"] == ADMIN_CHANNEL]) == 1


def test_should_be_answerable_puts_a_refusal_in_the_queue(start: Callable[..., Slack]) -> None:  # noqa: F811
    bot = start("http", admin_channel=ADMIN_CHANNEL)
    bot.mention(PARKING, ts="1803.000100")
    (refusal,) = bot.replies(1)
    bot.click(refusal, "groundbot_reason_should_answer", user=USER)
    card = bot.replies(2)[-1]
    assert card.args["channel"] == ADMIN_CHANNEL and "A user flagged #" in blocks_text(card)
    assert "feedback: should_answer" not in blocks_text(card) and "should_answer" in blocks_text(card)
    (thanks,) = bot.api.wait_for("chat.postEphemeral")
    assert thanks.args["text"] == "Thanks, an admin will look at it."
    [entry] = bot.app.desk.queue.entries()
    assert (entry.origin, entry.reason) == ("feedback", "should_answer")
