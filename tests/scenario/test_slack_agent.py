"""Slack's agent surface, end to end with the real slack-bolt App against the Slack stand-in:
the Messages tab greeting with suggested prompts (a press asks one), the agent view's suggested
prompts set for the conversation when its Messages tab opens (Slack applies none an agent-view
app sets on a thread), the older assistant view's set on the thread it starts, all drawn from the
knowledge base and what people ask most."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.scenario.test_slack import MODES, USER, Slack, blocks_text, buttons, context_text, kb_index, standin, start
from tests.standins.slack import TEAM, SlackStandIn

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
def test_an_agent_view_conversation_shows_suggested_prompts_from_the_opening_of_its_messages_tab(
        start: Callable[..., Slack], standin: SlackStandIn, mode: str) -> None:
    """The manifest's agent view: `app_home_opened` on the Messages tab begins the conversation, and
    its prompts are set without a thread, fresh at every opening; the greeting comes once."""
    assert standin.agent_view
    bot = start(mode)
    bot.mention("How do I renew a book?", ts="1903.000100")  # asked most: suggested first
    bot.replies(1)
    home_opened(bot, tab="home")  # the Home tab: nothing
    home_opened(bot)
    (call,) = bot.api.wait_for("assistant.threads.setSuggestedPrompts")
    assert call.args["channel_id"] == DM and "thread_ts" not in call.args and call.result["ok"]
    shown = standin.wait_until(lambda: standin.suggested.get((DM, "")), what="the prompts shown")
    assert shown[0] == {"title": "How do I renew a book?", "message": "How do I renew a book?"}
    assert 2 <= len(shown) <= 4 and all(p["title"] and p["message"].endswith("?") for p in shown)
    _, greeting = bot.replies(2)
    assert [b["text"]["text"] for b in buttons(greeting)] == [p["message"] for p in shown]
    home_opened(bot)  # opened again: the prompts again, no second greeting
    bot.api.wait_for("assistant.threads.setSuggestedPrompts", 2)
    bot.settle()
    assert len(bot.api.requests("chat.postMessage")) == 2
    # a prompt picked is a message of the conversation, answered in its thread like any direct message
    bot.event({"type": "message", "channel_type": "im", "channel": DM, "user": USER, "text": shown[1]["message"],
               "ts": "1903.000300", "event_ts": "1903.000300", "team": TEAM})
    *_, reply = bot.replies(3)
    assert reply.args["thread_ts"] == "1903.000300" and blocks_text(reply)


def test_prompts_an_agent_view_app_sets_on_a_thread_are_not_shown(start: Callable[..., Slack],
                                                                   standin: SlackStandIn) -> None:
    """The stand-in answers as Slack does: `ok`, and nothing shown (what groundbot once did, caught here)."""
    bot = start("socket")
    bot.adapter.client.assistant_threads_setSuggestedPrompts(channel_id=DM, thread_ts="1904.000100",
                                                              prompts=[{"title": "Hi?", "message": "Hi?"}])
    assert bot.api.requests("assistant.threads.setSuggestedPrompts")[0].result["ok"] and standin.suggested == {}


@pytest.mark.parametrize("mode", MODES)
def test_an_assistant_view_thread_gets_suggested_prompts_on_its_thread(start: Callable[..., Slack],
                                                                       standin: SlackStandIn, mode: str) -> None:
    """An app made from an older manifest (the assistant view, no agent view): the thread it starts
    gets the prompts."""
    standin.agent_view = False
    bot = start(mode)
    bot.event({"type": "assistant_thread_started", "event_ts": "1902.2",
               "assistant_thread": {"user_id": USER, "channel_id": DM, "thread_ts": "1902.000100",
                                    "context": {"channel_id": "C0GENERAL", "team_id": TEAM}}})
    (call,) = bot.api.wait_for("assistant.threads.setSuggestedPrompts")
    assert (call.args["channel_id"], call.args["thread_ts"]) == (DM, "1902.000100")
    prompts = standin.wait_until(lambda: standin.suggested.get((DM, "1902.000100")), what="the prompts shown")
    assert 1 <= len(prompts) <= 4 and all(p["title"] and p["message"].endswith("?") for p in prompts)
    # a question in that conversation is answered in it, like any direct message in a thread
    bot.event({"type": "message", "channel_type": "im", "channel": DM, "user": USER, "text": prompts[0]["message"],
               "ts": "1902.000200", "thread_ts": "1902.000100", "event_ts": "1902.000200", "team": TEAM})
    (reply,) = bot.replies(1)
    assert reply.args["thread_ts"] == "1902.000100" and blocks_text(reply)
