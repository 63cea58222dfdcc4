"""Slack's agent surface: the Messages tab where a conversation with groundbot begins (suggested
prompts drawn from the knowledge base and what people ask, and a greeting once per person), the
assistant view of apps made from an older manifest, and the greeting's prompt buttons."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from typing import Any

from slack_bolt import App as BoltApp
from slack_sdk.errors import SlackApiError

from adapters.slack.answering import Answering
from adapters.slack.rendering import PROMPT_ACTION_PREFIX, greeting, suggested_prompts
from adapters.slack.wiring import PLATFORM, Wiring, ids
from core.messages import ConversationKey, Incoming

log = logging.getLogger("groundbot.slack")


class AgentSurface:
    """The Messages tab's openings, the assistant view's threads and the greeting's prompts;
    a prompt pressed is asked through `answering`."""

    def __init__(self, wiring: Wiring, answering: Answering) -> None:
        self.w = wiring
        self.answering = answering

    def register(self, app: BoltApp) -> None:
        app.event("app_home_opened")(self.on_home_opened)
        app.event("assistant_thread_started")(self.on_agent_thread)
        app.action(re.compile(rf"^{PROMPT_ACTION_PREFIX}\d+$"))(self.on_prompt)

    def on_home_opened(self, body: dict[str, Any], event: dict[str, Any]) -> None:
        """Someone opened groundbot's Messages tab. In Slack's agent view (the manifest's
        `features.agent_view`) this is where a conversation begins: its suggested prompts are set
        for the conversation (no thread: Slack ignores a thread an agent-view app names), drawn from
        the knowledge base and what people ask, fresh at every opening. The person is also greeted
        once (what groundbot does, with the same questions as buttons)."""
        with self.w.handled(body):
            user, channel = str(event.get("user") or ""), str(event.get("channel") or "")
            if event.get("tab") != "messages" or not user or not channel:
                return
            prompts = self.w.backend.prompts(PLATFORM, channel)
            self.suggest(channel, prompts)
            if not self.w.once.first(f"greet:{user}"):
                return
            message = greeting(prompts)
            try:
                self.w.client.chat_postMessage(channel=channel, text=message.text, blocks=message.blocks)
            except SlackApiError as exc:
                log.warning("greeting %s failed: %s", user, exc.response.get("error"))

    def on_agent_thread(self, body: dict[str, Any], event: dict[str, Any]) -> None:
        """A conversation opened in the assistant view of an app without the agent view (an app made
        from an older manifest; an agent-view app gets `app_home_opened` instead): its suggested
        prompts, set on its thread, drawn as at an opening of the Messages tab."""
        with self.w.handled(body):
            thread = event.get("assistant_thread") or {}
            channel, ts = str(thread.get("channel_id") or ""), str(thread.get("thread_ts") or "")
            if channel and ts:
                self.suggest(channel, self.w.backend.prompts(PLATFORM, channel), ts)

    def suggest(self, channel: str, prompts: Sequence[str], thread: str = "") -> None:
        """Set the suggested prompts of a direct-message conversation, or of one of its threads (the
        assistant view's). A workspace without agent features refuses the call: logged, nothing more."""
        if not prompts:
            return
        try:
            self.w.client.assistant_threads_setSuggestedPrompts(channel_id=channel, thread_ts=thread or None,
                                                                prompts=suggested_prompts(prompts))
        except SlackApiError as exc:
            log.info("suggesting prompts in %s failed: %s", channel, exc.response.get("error"))

    def on_prompt(self, ack: Callable[..., Any], body: dict[str, Any], action: dict[str, Any]) -> None:
        """A greeting's prompt button asks that prompt, in the thread of the greeting."""
        ack()
        channel, user, team = ids(body)
        message = body.get("message") or {}
        thread, text = str(message.get("ts") or ""), str(action.get("value") or "").strip()
        if not channel or not thread or not text or not self.w.once.first(f"prompt:{channel}:{thread}:{text}:{user}"):
            return
        msg = Incoming(ConversationKey(PLATFORM, channel, thread), user, text, team_id=team)
        self.answering.answer(msg, channel, thread, picked_by=user)
