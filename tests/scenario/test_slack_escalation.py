"""From a refusal to a person's answer to the knowledge base, end to end on Slack: the real
slack-bolt App against the Slack stand-in, over a real groundbot App whose review queue and FAQ
ingest are real.

"Ask a person" under a refusal tags the channel's experts (a user group and a member) in the
thread, once however often it is pressed; an expert's reply there that answers becomes an FAQ
draft in the review queue (an emoji or a question back does not, nor a non-expert's reply); saved
as an FAQ entry, it answers the next person who asks; the stats count each step.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import pytest

from adapters.slack.rendering import ESCALATE_ACTION
from bot.cli.report import summarise
from storage.records.report_data import load
from tests.scenario.test_slack import (
    ADMIN,
    CHANNEL,
    MODES,
    PARKING,
    USER,
    Slack,
    blocks_text,
    buttons,
    kb_index,
    standin,
    start,
)
from tests.standins.slack import Call

__all__ = ["kb_index", "standin", "start"]  # the Slack scenarios' fixtures, reused
EXPERTS = {"GROUNDBOT_SLACK__EXPERTS": '["S0EXPERTS", "UCAROL01"]'}
DAVE = "UDAVE001"  # a member of the S0EXPERTS user group
ANSWER = "Parking permits are renewed at the front desk of the library every January."


def in_thread(bot: Slack, thread: str) -> list[Call]:
    return [c for c in bot.api.requests("chat.postMessage") if c.args.get("thread_ts") == thread]


@pytest.mark.parametrize("mode", MODES)
def test_ask_a_person_closes_the_loop_into_the_knowledge_base(start: Callable[..., Slack], mode: str) -> None:
    bot = start(mode, environ=EXPERTS, admin_channel="C0ADMINS")
    bot.api.user_groups["S0EXPERTS"] = [DAVE]
    bot.mention(PARKING, ts="1960.000100")
    (refusal,) = bot.replies(1)
    (turn,) = bot.app.store.turns()
    assert turn.refused
    [ask] = [b for b in buttons(refusal) if b["action_id"] == ESCALATE_ACTION]
    assert (ask["text"]["text"], ask["value"]) == ("Ask a person", str(turn.id))

    bot.click(refusal, ESCALATE_ACTION)
    bot.settle()
    bot.click(refusal, ESCALATE_ACTION, user="UBOB0001")  # pressed again: the experts were asked already
    bot.settle()
    [tagged] = in_thread(bot, "1960.000100")[1:]
    assert blocks_text(tagged).startswith(f"<!subteam^S0EXPERTS> <@UCAROL01>: <@{USER}> needs a person")
    assert PARKING in blocks_text(tagged)
    told = [c.args for c in bot.api.requests("chat.postEphemeral")]
    assert [(t["user"], t["text"]) for t in told] == [
        ("UBOB0001", "The experts were asked already; their answer will come in this thread.")]

    # replies that are not an expert's answer: an emoji, a question back, a colleague's guess
    bot.say(":thinking_face:", ts="1960.000300", thread_ts="1960.000100", user=DAVE)
    bot.say("Which permit do you mean, the car or the bike one?", ts="1960.000400", thread_ts="1960.000100", user=DAVE)
    bot.say("I think it is online somewhere.", ts="1960.000500", thread_ts="1960.000100", user="UBOB0001")
    bot.settle()
    assert bot.app.desk.queue.entries() == []
    # the expert's answer (mentioning the asker), taken once: a second expert's comes too late
    bot.say(f"<@{USER}> {ANSWER}", ts="1960.000600", thread_ts="1960.000100", user=DAVE)
    bot.settle()  # taken before the next reply arrives (replies at once race: the first one taken wins)
    bot.say("Also at the town hall.", ts="1960.000700", thread_ts="1960.000100", user="UCAROL01")
    bot.settle()
    [item] = bot.app.desk.queue.entries()
    assert (item.turn_id, item.origin, item.reason) == (turn.id, "expert", f"slack:{DAVE}")
    assert item.draft == f"@{USER} {ANSWER}" and item.question == PARKING
    marks = [c.args for c in bot.api.requests("reactions.add") if c.args["name"] == "white_check_mark"]
    assert [m["timestamp"] for m in marks] == ["1960.000600"]
    card = bot.api.wait_until(lambda: [c for c in bot.api.requests("chat.postMessage")
                                       if c.args["channel"] == "C0ADMINS"], what="the card in the admin channel")[0]
    assert "An expert answered" in blocks_text(card)

    # an admin saves it as an FAQ entry (with the asker's mention taken out): the next asker gets it
    saved = bot.app.review("slack", ADMIN, "faq", item.id, ANSWER)
    assert saved.ok, saved.text
    bot.mention(PARKING, ts="1961.000100", user="UERIN001")
    bot.api.wait_until(lambda: in_thread(bot, "1961.000100"), what="the next asker's answer")
    [answer] = in_thread(bot, "1961.000100")
    assert "front desk of the library every January" in blocks_text(answer)
    stats = bot.app.stats()
    assert stats["escalations"] == {"escalated": 1, "answered_by_people": 1, "turned_into_faq": 1}
    assert bot.command("/groundbot-stats") == {}  # what an admin reads: a bare ack, the numbers follow privately
    (shown,) = bot.api.wait_for("respond")  # sent after the ack, by the listener
    assert "Handed to people: 1 questions, 1 answered by an expert, 1 turned into FAQ entries" in shown.args["text"]
    people = summarise(load(bot.app.store.engine), datetime.now(UTC))["people"]  # the monitoring report's table
    assert people == {"escalated": 1, "answered by people": 1, "turned into FAQ entries": 1}


@pytest.mark.parametrize("mode", MODES)
def test_without_experts_no_button_is_offered(start: Callable[..., Slack], mode: str) -> None:
    bot = start(mode)
    bot.mention(PARKING, ts="1962.000100")
    (refusal,) = bot.replies(1)
    assert ESCALATE_ACTION not in {b["action_id"] for b in buttons(refusal)}
    # a forged press is ignored
    payload_turn = bot.app.store.turns()[0].id
    assert bot.app.escalate("slack", USER, payload_turn or 0) is None
    assert bot.app.stats()["escalations"] == {"escalated": 0, "answered_by_people": 0, "turned_into_faq": 0}


def test_a_thumbs_down_on_an_answer_offers_a_person(start: Callable[..., Slack]) -> None:
    bot = start("socket", environ=EXPERTS)
    bot.mention("When does the library open?", ts="1963.000100")
    (reply,) = bot.replies(1)
    (turn,) = bot.app.store.turns()
    reply_after = bot.app.feedback(USER, turn.id or 0, -1, "wrong")
    [ask] = [b for s in reply_after.sections for b in s.buttons]
    assert (ask.action, ask.item_id) == ("escalate", turn.id)
    assert bot.app.escalate("slack", USER, turn.id or 0) is not None
    assert reply.args["channel"] == CHANNEL
