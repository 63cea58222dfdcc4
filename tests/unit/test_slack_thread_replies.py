"""Which Slack channel messages may be follow-ups without a mention, from the event alone
(adapters/slack/threads.py); whether the bot answered the sender in the thread is asked after."""

from __future__ import annotations

from typing import Any

import pytest

from adapters.slack.threads import never_a_question, thread_reply

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


def test_only_channel_messages_that_cannot_be_questions_are_dropped_before_the_claim() -> None:
    def body(event: dict[str, Any]) -> dict[str, Any]:
        return {"type": "event_callback", "event_id": "Ev1", "event": event}

    assert not never_a_question(body(reply()), BOT, follow_ups=True)
    assert never_a_question(body(reply()), BOT, follow_ups=False)
    assert never_a_question(body(reply(thread_ts=None)), BOT, follow_ups=True)
    assert not never_a_question(body(reply(channel_type="im", thread_ts=None)), BOT, follow_ups=False)  # DMs
    assert not never_a_question(body({"type": "app_mention", "text": f"<@{BOT}> hi"}), BOT, follow_ups=False)
    assert not never_a_question({"type": "block_actions"}, BOT, follow_ups=True)
