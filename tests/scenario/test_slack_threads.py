"""Follow-ups in Slack channel threads without a new mention, end to end: the real slack-bolt
App and slack-sdk client against the local Slack stand-in (Socket Mode and HTTP), over a real
groundbot App whose transcript database holds who was answered in which thread.

Once groundbot has answered someone in a channel thread, their next plain reply there is a
follow-up of that conversation. Left alone: threads groundbot never answered, bots (itself
included), edits and other subtypes, replies that mention someone (the bot's own mention comes
as app_mention and is answered once), other people's replies (they mention the bot once, then
continue like the asker), and everything when `[slack] thread_follow_ups = false`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from adapters.slack import SlackAdapter
from bot.platforms import SlackThreads
from bot.server.metrics import Metrics
from bot.server.shared import SharedOnce
from core.messages import Platform
from storage.records.deliveries import Deliveries
from storage.records.reply_threads import ReplyThreads
from tests.scenario.test_slack import (
    BOT_TOKEN,
    CHANNEL,
    MODES,
    SECRET,
    USER,
    Slack,
    blocks_text,
    kb_index,
    run_adapter,
    standin,
    start,
)
from tests.standins.slack import BOT_USER, TEAM, Call

__all__ = ["kb_index", "standin", "start"]  # the Slack scenarios' fixtures, reused
BOB = "UBOB0001"
PRIVATE = "G0PRIVATE"


def posted_in(bot: Slack, thread: str, channel: str = CHANNEL) -> list[Call]:
    return [c for c in bot.api.requests("chat.postMessage")
            if c.args.get("thread_ts") == thread and c.args["channel"] == channel]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("channel, kind", [(CHANNEL, "channel"), (PRIVATE, "group")])
def test_the_askers_thread_reply_without_a_mention_is_a_follow_up(start: Callable[..., Slack], mode: str,
                                                                  channel: str, kind: str) -> None:
    bot = start(mode)
    bot.mention("How do I renew a book?", ts="1740.000100", channel=channel)
    (first,) = bot.replies(1)
    bot.settle()  # the answer went out, and who it answered is stored (as a person reads it first)
    bot.event(bot.api.message_event(first))  # groundbot's own answer, as the channel subscription sends it
    bot.say("How many times can I do that?", ts="1740.000500", thread_ts="1740.000100", channel=channel,
            channel_type=kind)
    _, second = bot.replies(2)
    assert (second.args["channel"], second.args["thread_ts"]) == (channel, "1740.000100")
    assert "at most three times" in blocks_text(second)
    asked, follow_up = bot.app.store.turns()
    assert follow_up.question == "How many times can I do that?" and follow_up.user_id == USER
    assert (follow_up.chat_id, follow_up.thread_id) == (channel, "1740.000100")
    assert follow_up.conversation_id == asked.conversation_id and follow_up.record["history"] == "loaded"
    assert not follow_up.refused
    # the status under the thread on the follow-up, like on any question
    shown = [c.args["thread_ts"] for c in bot.api.requests("assistant.threads.setStatus") if c.args["status"]]
    assert shown == ["1740.000100", "1740.000100"]
    bot.event(bot.api.message_event(second))
    bot.settle()
    assert len(bot.api.requests("chat.postMessage")) == 2 and len(bot.app.store.turns()) == 2


@pytest.mark.parametrize("mode", MODES)
def test_thread_replies_that_are_not_follow_ups_are_left_alone(start: Callable[..., Slack], mode: str) -> None:
    bot = start(mode, once=lambda app: SharedOnce(Deliveries(app.store.engine), Metrics(), Platform.SLACK))
    once = bot.adapter.wiring.once  # deliveries as rows, to count what was claimed
    assert isinstance(once, SharedOnce)
    deliveries = once.deliveries
    bot.mention("How do I renew a book?", ts="1741.000100")
    (answer,) = bot.replies(1)
    bot.settle()
    thread = "1741.000100"
    claimed = sum(deliveries.claims().values())
    # what Slack sends an app subscribed to the channel's messages, none of it a question:
    bot.say("Anyone up for lunch?", ts="1741.000200")  # not in a thread
    bot.event(bot.api.message_event(answer))  # groundbot's own answer
    bot.event({"type": "message", "subtype": "bot_message", "bot_id": "B0OTHER", "username": "deploybot",
               "channel": CHANNEL, "channel_type": "channel", "text": "Deploy finished", "ts": "1741.000300",
               "thread_ts": thread, "team": TEAM})  # another bot in the thread
    bot.event({"type": "message", "subtype": "message_changed", "channel": CHANNEL, "channel_type": "channel",
               "hidden": True, "ts": "1741.000410", "event_ts": "1741.000410",
               "message": {"type": "message", "user": USER, "text": "How long is a loan?", "ts": "1741.000400",
                           "thread_ts": thread, "edited": {"user": USER, "ts": "1741.000410"}}})  # an edit
    bot.say("", ts="1741.000420", thread_ts=thread, subtype="message_deleted", hidden=True,
            deleted_ts="1741.000400")
    bot.say("joined", ts="1741.000430", thread_ts=thread, subtype="channel_join")
    bot.settle()
    assert sum(deliveries.claims().values()) == claimed  # acknowledged without a delivery row each
    # thread replies, looked up and left alone:
    bot.say("Thanks, Alice, I will try that too.", ts="1741.000500", thread_ts=thread, user=BOB)  # not the asker
    bot.say("<@UBOB0001> did that work for you?", ts="1741.000600", thread_ts=thread)  # to a colleague
    bot.say("<!here> renewals are online now", ts="1741.000610", thread_ts=thread)  # to the channel
    bot.say("How many times can I do that?", ts="1742.000200", thread_ts="1742.000100")  # a thread never answered
    bot.say("How many times can I do that?", ts="1741.000700", thread_ts=thread, channel="C0OTHER")  # same ts elsewhere
    bot.settle()
    assert len(bot.api.requests("chat.postMessage")) == 1 and len(bot.app.store.turns()) == 1
    assert [c.args["thread_ts"] for c in bot.api.requests("assistant.threads.setStatus") if c.args["status"]] == [thread]
    assert "claimed" not in deliveries.claims()
    # processing went on: the asker's own reply is still a follow-up, "also sent to the channel" too
    bot.say("How many times can I do that?", ts="1741.000800", thread_ts=thread, subtype="thread_broadcast")
    _, follow_up = bot.replies(2)
    assert follow_up.args["thread_ts"] == thread and "at most three times" in blocks_text(follow_up)
    assert [t.user_id for t in bot.app.store.turns()] == [USER, USER]


@pytest.mark.parametrize("mode", MODES)
def test_a_mention_in_an_answered_thread_is_answered_once(start: Callable[..., Slack], mode: str) -> None:
    """A mention in a channel comes twice, as app_mention and as a channel message, in either
    order; it is one question. Someone else who mentions the bot in the thread is answered, and
    continues without a mention from then on, like the asker."""
    bot = start(mode)
    thread = "1743.000100"
    bot.mention("How do I renew a book?", ts=thread)
    bot.replies(1)
    bot.settle()
    text = f"<@{BOT_USER}> How many times can I do that?"
    bot.say(text, ts="1743.000200", thread_ts=thread)  # the channel message first ...
    bot.mention("How many times can I do that?", ts="1743.000200", thread_ts=thread)  # ... then the mention
    bot.replies(2)
    bot.mention("When does the library open?", ts="1743.000300", thread_ts=thread, user=BOB)  # the mention first
    bot.say(f"<@{BOT_USER}> When does the library open?", ts="1743.000300", thread_ts=thread, user=BOB)
    bot.replies(3)
    bot.settle()
    bot.say("And on Saturdays?", ts="1743.000400", thread_ts=thread, user=BOB)  # Bob was answered here now
    bot.replies(4)
    bot.settle()
    answers = posted_in(bot, thread)
    assert len(answers) == 4
    assert "at most three times" in blocks_text(answers[1]) and "9 in the morning" in blocks_text(answers[2])
    assert "closes at 5 in the afternoon" in blocks_text(answers[3])
    turns = bot.app.store.turns()
    assert [(t.user_id, t.question) for t in turns] == [
        (USER, "How do I renew a book?"), (USER, "How many times can I do that?"),
        (BOB, "When does the library open?"), (BOB, "And on Saturdays?")]
    assert len({t.conversation_id for t in turns}) == 1 and turns[3].record["history"] == "loaded"


@pytest.mark.parametrize("mode", MODES)
def test_with_thread_follow_ups_off_a_thread_reply_needs_a_mention(start: Callable[..., Slack], mode: str) -> None:
    bot = start(mode, environ={"GROUNDBOT_SLACK__THREAD_FOLLOW_UPS": "false"})
    assert bot.app.config.slack.thread_follow_ups is False
    thread = "1744.000100"
    bot.mention("How do I renew a book?", ts=thread)
    bot.replies(1)
    bot.settle()
    bot.say("How many times can I do that?", ts="1744.000200", thread_ts=thread)
    bot.settle()
    assert len(bot.api.requests("chat.postMessage")) == 1 and len(bot.app.store.turns()) == 1
    bot.mention("How many times can I do that?", ts="1744.000300", thread_ts=thread)  # a mention still is one
    _, answer = bot.replies(2)
    assert answer.args["thread_ts"] == thread and "at most three times" in blocks_text(answer)


def test_a_follow_up_reaches_a_worker_that_did_not_answer_the_thread(start: Callable[..., Slack], standin: Any,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Who was answered in which thread is a row of the transcript database, not a worker's
    memory: a second worker (or the same one after a restart) places the asker's reply."""
    first = start("http")
    first.mention("How do I renew a book?", ts="1745.000100")
    first.replies(1)
    first.settle()
    stops: list[Callable[[], None]] = []
    adapter = SlackAdapter(first.app, bot_token=BOT_TOKEN, signing_secret=SECRET, api_base_url=standin.api_url,
                           threads=SlackThreads(ReplyThreads(first.app.store.engine)))
    try:
        other = run_adapter("http", standin, first.app, adapter, monkeypatch, stops)
        other.say("How many times can I do that?", ts="1745.000200", thread_ts="1745.000100")
        _, answer = other.replies(2)
        assert answer.args["thread_ts"] == "1745.000100" and "at most three times" in blocks_text(answer)
        assert first.app.store.turns()[-1].record["history"] == "loaded"
    finally:
        for stop in stops:
            stop()



@pytest.mark.parametrize("mode", MODES)
def test_a_mention_under_someone_elses_question_answers_that_question(start: Callable[..., Slack], mode: str) -> None:
    """Bob asked at the root; Alice mentions groundbot in the thread: Bob's question is answered
    (with Alice's own words after it when she wrote some), in the thread, Alice the asker of record."""
    bot = start(mode)
    bot.api.add_message(CHANNEL, "1750.000100", BOB, "How do I renew a book?")
    bot.mention("", ts="1750.000200", thread_ts="1750.000100")
    (reply,) = bot.replies(1)
    assert reply.args["thread_ts"] == "1750.000100" and "renew a book online" in blocks_text(reply)
    (turn,) = bot.app.store.turns()
    assert (turn.question, turn.user_id, turn.thread_id) == ("How do I renew a book?", USER, "1750.000100")
    # with words of her own, both are read
    bot.api.add_message(CHANNEL, "1751.000100", BOB, "When does the library open?")
    bot.mention("and on Saturdays?", ts="1751.000200", thread_ts="1751.000100")
    _, second = bot.replies(2)
    assert "closes at 5 in the afternoon" in blocks_text(second)
    assert bot.app.store.turns()[-1].question == "When does the library open?\nand on Saturdays?"


@pytest.mark.parametrize("mode", MODES)
def test_a_mention_under_a_deleted_or_unreadable_root_answers_its_own_words(start: Callable[..., Slack],
                                                                           mode: str) -> None:
    bot = start(mode)
    bot.api.add_message(CHANNEL, "1752.000100", BOB, "This message was deleted.", subtype="tombstone")
    bot.mention("How do I renew a book?", ts="1752.000200", thread_ts="1752.000100")
    bot.replies(1)
    bot.api.fail_next("conversations.replies", error="missing_scope")
    bot.api.add_message(CHANNEL, "1753.000100", BOB, "What are the opening hours?")
    bot.mention("How do I get a library card?", ts="1753.000200", thread_ts="1753.000100")
    bot.replies(2)
    assert [t.question for t in bot.app.store.turns()] == ["How do I renew a book?", "How do I get a library card?"]
