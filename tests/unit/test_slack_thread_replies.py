"""Which Slack channel messages may be follow-ups without a mention, from the event alone
(adapters/slack/threads.py); whether the bot answered the sender in the thread is asked after. The
message kinds built on them (adapters/slack/kinds.py) decide which events are claimed at all."""

from __future__ import annotations

from typing import Any

import pytest

from adapters.chat_rules import ChatRules
from adapters.slack.kinds import MessageKinds
from adapters.slack.threads import thread_reply
from core.messages import Answering, ChatPolicy, Platform

BOT = "UBOT"


def reply(**fields: Any) -> dict[str, Any]:
    event = {"type": "message", "channel": "C1", "channel_type": "channel", "user": "UALICE", "text": "and then?",
             "ts": "10.2", "thread_ts": "10.1"}
    event.update(fields)
    return {k: v for k, v in event.items() if v is not None}


@pytest.mark.parametrize("fields", [{}, {"channel_type": "group"}, {"subtype": "thread_broadcast"}])
def test_a_persons_plain_reply_in_a_channel_thread_may_be_one(fields: dict[str, Any]) -> None:
    assert thread_reply(reply(**fields), BOT)


@pytest.mark.parametrize("fields", [
    {"thread_ts": None},  # not in a thread
    {"thread_ts": "10.2"},  # the thread's first message
    {"channel_type": "mpim"},  # a group DM: not subscribed
    {"subtype": "message_changed"}, {"subtype": "message_deleted"}, {"subtype": "channel_join"},
    {"subtype": "file_share"}, {"subtype": "bot_message", "user": None, "bot_id": "B2"},
    {"bot_id": "B1"}, {"bot_profile": {"id": "B1"}}, {"user": BOT}, {"user": None},  # bots, itself
    {"text": "  "},
    {"text": f"<@{BOT}> and then?"}, {"text": f"<@{BOT}|groundbot> and then?"},  # comes as app_mention
    {"text": "<@UBOB> and then?"}, {"text": "<!here> and then?"}, {"text": "<!subteam^S1> and then?"},  # to others
])
def test_everything_else_is_not(fields: dict[str, Any]) -> None:
    assert not thread_reply(reply(**fields), BOT)


class Policies:
    """The one thing of a backend the message kinds ask: every channel's policy is `policy`."""

    def __init__(self, policy: ChatPolicy) -> None:
        self.policy = policy

    def chat_policy(self, platform: str, chat_id: str) -> ChatPolicy:
        return self.policy


def unclaimed(event: dict[str, Any], *, follow_ups: bool = False, policy: ChatPolicy = ChatPolicy()) -> bool:
    kinds = MessageKinds(ChatRules(Policies(policy), Platform.SLACK), follow_ups)  # type: ignore[arg-type]
    return kinds.unclaimed({"type": "event_callback", "event_id": "Ev1", "event": event}, BOT)


def test_only_channel_messages_that_cannot_be_questions_are_dropped_before_the_claim() -> None:
    assert not unclaimed(reply(), follow_ups=True)
    assert unclaimed(reply(), follow_ups=False)
    assert unclaimed(reply(thread_ts=None), follow_ups=True)
    direct = reply(channel="D1", channel_type="im", thread_ts=None)
    assert not unclaimed(direct)  # a person's direct message
    assert unclaimed({**direct, "bot_id": "B1"}) and unclaimed({**direct, "subtype": "message_changed"})
    assert not unclaimed({"type": "app_mention", "text": f"<@{BOT}> hi"})
    assert not MessageKinds(None, True).unclaimed({"type": "block_actions"}, BOT)  # type: ignore[arg-type]


def test_a_channel_policy_takes_its_unprompted_questions_and_its_experts_replies() -> None:
    asks = ChatPolicy(Answering.QUESTIONS)
    assert not unclaimed(reply(thread_ts=None, text="How long is a loan?"), policy=asks)
    assert unclaimed(reply(thread_ts=None, text="Lunch, anyone."), policy=asks)
    assert unclaimed(reply(thread_ts=None, text="<@UBOB> how long is a loan?"), policy=asks)  # addressed to Bob
    experts = ChatPolicy(experts=("UCAROL",))
    assert not unclaimed(reply(text="<@UALICE> it is 14 days."), policy=experts)  # a reply an expert may have written
    assert unclaimed(reply(text="<@UALICE> it is 14 days."))  # no experts, no follow-ups: nobody's
