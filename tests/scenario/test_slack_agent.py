"""Slack's agent surface, end to end with the real slack-bolt App against the Slack stand-in:
the Messages tab greeting with suggested prompts (a press asks one), the agent view's suggested
prompts, both drawn from the knowledge base and what people ask most."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.scenario.test_slack import MODES, USER, Slack, blocks_text, buttons, context_text, kb_index, standin, start
from tests.standins.slack import TEAM

__all__ = ["kb_index", "standin", "start"]  # the Slack scenarios' fixtures, reused
DM = "D0ALICE"


def home_opened(bot: Slack, tab: str = "messages", user: str = USER) -> None:
    bot.event({"type": "app_home_opened", "user": user, "channel": DM, "tab": tab, "event_ts": "1900.1"})


@pytest.mark.parametrize("mode", MODES)
def test_the_messages_tab_greets_once_with_prompts_and_a_press_asks_one(start: Callable[..., Slack],
                                                                        mode: str) -> None:
    bot = start(mode)
    bot.mention("How do I renew a book?", ts="1901.000100")  # asked most: offered first
    bot.replies(1)
    home_opened(bot, tab="home")  # the Home tab: nothing
    home_opened(bot)
    _, greeting = bot.replies(2)
    assert greeting.args["channel"] == DM and "thread_ts" not in greeting.args
    assert "cite my sources" in blocks_text(greeting)
    offered = [b["text"]["text"] for b in buttons(greeting)]
    assert offered[0] == "How do I renew a book?" and 2 <= len(offered) <= 4
    assert all(t.endswith("?") for t in offered)  # the knowledge base's own questions after it
    home_opened(bot)  # opened again: not greeted again
    bot.settle()
    assert len(bot.api.requests("chat.postMessage")) == 2
    pick = buttons(greeting)[1]
    bot.click(greeting, pick["action_id"])
    *_, answer = bot.replies(3)
    assert (answer.args["channel"], answer.args["thread_ts"]) == (DM, greeting.result["ts"])
    assert f"<@{USER}> asked: {pick['text']['text']}" in context_text(answer)
    assert bot.app.store.turns()[-1].question == pick["value"]


@pytest.mark.parametrize("mode", MODES)
def test_an_agent_view_conversation_gets_suggested_prompts(start: Callable[..., Slack], mode: str) -> None:
    bot = start(mode)
    bot.event({"type": "assistant_thread_started", "event_ts": "1902.2",
               "assistant_thread": {"user_id": USER, "channel_id": DM, "thread_ts": "1902.000100",
                                    "context": {"channel_id": "C0GENERAL", "team_id": TEAM}}})
    (call,) = bot.api.wait_for("assistant.threads.setSuggestedPrompts")
    assert (call.args["channel_id"], call.args["thread_ts"]) == (DM, "1902.000100")
    prompts = call.args["prompts"]
    assert 1 <= len(prompts) <= 4 and all(p["title"] and p["message"].endswith("?") for p in prompts)
    # a question in that conversation is answered in it, like any direct message in a thread
    bot.event({"type": "message", "channel_type": "im", "channel": DM, "user": USER, "text": prompts[0]["message"],
               "ts": "1902.000200", "thread_ts": "1902.000100", "event_ts": "1902.000200", "team": TEAM})
    (reply,) = bot.replies(1)
    assert reply.args["thread_ts"] == "1902.000100" and blocks_text(reply)
