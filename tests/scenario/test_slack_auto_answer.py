"""A help channel answered without a mention, end to end: the real slack-bolt App and slack-sdk
client against the local Slack stand-in (Socket Mode and HTTP), over a real groundbot App.

With `[slack] answer_in_channels = "questions"` (or a scope's `answer`), a person's top-level
channel message with a question mark is answered in its thread when groundbot can answer; a
refusal is recorded but not posted (or only reacted to); other messages are left alone, and a
channel past its per-minute rate is left alone too.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.scenario.test_slack import CHANNEL, MODES, PARKING, USER, Slack, blocks_text, kb_index, standin, start

__all__ = ["kb_index", "standin", "start"]  # the Slack scenarios' fixtures, reused
QUESTIONS = {"GROUNDBOT_SLACK__ANSWER_IN_CHANNELS": "questions"}


@pytest.mark.parametrize("mode", MODES)
def test_a_channel_question_is_answered_in_its_thread_without_a_mention(start: Callable[..., Slack],
                                                                        mode: str) -> None:
    bot = start(mode, environ=QUESTIONS)
    bot.say("How do I renew a book?", ts="1801.000100")
    (reply,) = bot.replies(1)
    assert (reply.args["channel"], reply.args["thread_ts"]) == (CHANNEL, "1801.000100")
    assert "renew a book online" in blocks_text(reply)
    (turn,) = bot.app.store.turns()
    assert (turn.user_id, turn.thread_id, turn.refused) == (USER, "1801.000100", False)
    # the asker's reply in that thread is a follow-up, as after a mention
    bot.settle()
    bot.say("How many times can I do that?", ts="1801.000300", thread_ts="1801.000100")
    _, follow_up = bot.replies(2)
    assert follow_up.args["thread_ts"] == "1801.000100" and "at most three times" in blocks_text(follow_up)


@pytest.mark.parametrize("mode", MODES)
def test_a_refused_channel_question_stays_quiet_and_is_recorded(start: Callable[..., Slack], mode: str) -> None:
    bot = start(mode, environ=QUESTIONS)
    bot.say(PARKING, ts="1802.000100")
    bot.say("Anyone up for lunch?", ts="1802.000200")
    bot.settle()
    assert bot.api.requests("chat.postMessage") == []
    turns = bot.app.store.turns()
    assert sorted((t.question, t.refused) for t in turns) == [("Anyone up for lunch?", True), (PARKING, True)]
    assert all(t.refusal_reason for t in turns)
    # a mention of the same question still gets the refusal, with its suggestions
    bot.mention(PARKING, ts="1802.000300")
    (refusal,) = bot.replies(1)
    assert blocks_text(refusal).startswith(bot.app.config.core.refusal.messages["en"])


@pytest.mark.parametrize("mode", MODES)
def test_a_quiet_refusal_can_be_a_reaction(start: Callable[..., Slack], mode: str) -> None:
    bot = start(mode, environ={**QUESTIONS, "GROUNDBOT_SLACK__REFUSAL_REACTION": "grey_question"})
    bot.say(PARKING, ts="1803.000100")
    bot.settle()
    assert bot.api.requests("chat.postMessage") == []
    marks = [c.args for c in bot.api.requests("reactions.add") if c.args["name"] == "grey_question"]
    assert marks == [{"channel": CHANNEL, "timestamp": "1803.000100", "name": "grey_question"}]


@pytest.mark.parametrize("mode", MODES)
def test_messages_that_are_not_questions_are_left_alone(start: Callable[..., Slack], mode: str) -> None:
    bot = start(mode, environ=QUESTIONS)
    bot.say("Deploy finished, the renewals page is back.", ts="1804.000100")  # no question mark
    bot.say("see https://library.example/search?q=renew", ts="1804.000200")  # the mark is a URL's
    bot.say("<@UBOB0001> how do I renew a book?", ts="1804.000300")  # addressed to a colleague
    bot.event({"type": "message", "subtype": "bot_message", "bot_id": "B0OTHER", "channel": CHANNEL,
               "channel_type": "channel", "text": "Is the build green?", "ts": "1804.000400"})  # another bot
    bot.say("How do I renew a book?", ts="1804.000500", subtype="channel_join")  # not a plain message
    bot.settle()
    assert bot.api.requests("chat.postMessage") == [] and bot.app.store.turns() == []


@pytest.mark.parametrize("mode", MODES)
def test_mentions_only_by_default(start: Callable[..., Slack], mode: str) -> None:
    bot = start(mode)
    bot.say("How do I renew a book?", ts="1805.000100")
    bot.settle()
    assert bot.api.requests("chat.postMessage") == [] and bot.app.store.turns() == []


def test_every_message_mode_answers_what_it_can(start: Callable[..., Slack]) -> None:
    bot = start("socket", environ={"GROUNDBOT_SLACK__ANSWER_IN_CHANNELS": "messages",
                                   "GROUNDBOT_READER__UNPROMPTED_PROBABILITY": "0.0"})  # every answer meets the bar
    bot.say("when does the library open", ts="1806.000100")
    bot.say("Deploy finished.", ts="1806.000200")
    (reply,) = bot.replies(1)
    bot.settle()
    assert reply.args["thread_ts"] == "1806.000100" and "9 in the morning" in blocks_text(reply)
    assert sorted((t.question, t.refused) for t in bot.app.store.turns()) == [
        ("Deploy finished.", True), ("when does the library open", False)]
    assert len(bot.api.requests("chat.postMessage")) == 1


def test_an_answer_below_the_unprompted_bar_stays_quiet_and_is_recorded(start: Callable[..., Slack]) -> None:
    """Nobody asked groundbot: an answer the reader is not sure enough of is recorded, not posted;
    the same question with a mention is answered."""
    bot = start("socket", environ={"GROUNDBOT_SLACK__ANSWER_IN_CHANNELS": "messages",
                                   "GROUNDBOT_READER__UNPROMPTED_PROBABILITY": "0.999"})
    bot.say("when does the library open", ts="1807.000100")
    bot.settle()
    (turn,) = bot.app.store.turns()
    assert turn.question == "when does the library open" and not turn.refused
    assert not bot.api.requests("chat.postMessage")
    bot.mention("when does the library open", ts="1807.000200")
    (reply,) = bot.replies(1)
    assert "9 in the morning" in blocks_text(reply)


def test_a_flooded_channel_is_answered_up_to_its_rate(start: Callable[..., Slack]) -> None:
    """200 messages in a minute: the first `auto_answers_per_minute` are answered (or refused
    quietly), the rest acknowledged and left alone; nothing is posted twice."""
    bot = start("socket", environ={**QUESTIONS, "GROUNDBOT_SLACK__AUTO_ANSWERS_PER_MINUTE": "3"})
    for i in range(200):
        bot.say("How do I renew a book?" if i % 2 == 0 else PARKING, ts=f"1807.{i:06d}")
    bot.settle()
    turns = bot.app.store.turns()
    assert len(turns) == 3  # which three depends on the order the workers took them in
    posted = bot.api.requests("chat.postMessage")
    assert len(posted) == sum(not t.refused for t in turns)  # the answered ones, each once; refusals quiet
    assert sorted(c.args["thread_ts"] for c in posted) == sorted(t.thread_id for t in turns if not t.refused)
    # another channel has a rate of its own
    bot.say("How do I renew a book?", ts="1807.900000", channel="C0OTHER")
    bot.api.wait_until(lambda: [c for c in bot.api.requests("chat.postMessage") if c.args["channel"] == "C0OTHER"],
                       what="the other channel's answer")
