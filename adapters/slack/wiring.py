"""What every Slack listener needs, given whole by the adapter's constructor, and the two ways
each of them writes to Slack (a post in a thread, a reaction on a message)."""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from adapters.chat_rules import ChatRules
from adapters.slack.dedupe import OnceKeys, event_key
from adapters.slack.rendering import SlackMessage
from adapters.slack.threads import AnsweredThreads
from core.messages import Platform
from core.ports import Backend

log = logging.getLogger("groundbot.slack")

PLATFORM = Platform.SLACK
WORKING_REACTION = "eyes"


@dataclass(frozen=True)
class Wiring:
    """The backend and the Web API client; `once` (rows every worker shares in `groundbot serve`)
    handles each event and press once; `rules`, the rules Slack shares with Telegram
    (adapters/chat_rules.py); `threads` None: channel thread replies without a mention are not
    follow-ups."""

    backend: Backend
    client: WebClient
    once: OnceKeys
    rules: ChatRules
    refusal_messages: Mapping[str, str]  # by language ([refusal.messages]); the catalogue's where it has none
    progress_interval_s: float
    threads: AnsweredThreads | None = None

    @contextmanager
    def handled(self, body: dict[str, Any]) -> Iterator[None]:
        """Around an event's listener: the event is marked done when it returns, answered or not,
        so no worker takes it over after."""
        try:
            yield
        finally:
            self.once.done(event_key(body))

    def post(self, channel: str, thread: str, messages: Sequence[SlackMessage],
             metadata: dict[str, Any] | None = None) -> bool:
        """Post in the thread; `metadata` marks an answer to a question (adapters/slack/thread_answers.py).
        True when every message was posted."""
        for m in messages:
            try:
                self.client.chat_postMessage(channel=channel, thread_ts=thread, text=m.text, blocks=m.blocks,
                                             unfurl_links=False, unfurl_media=False, metadata=metadata)
            except SlackApiError as exc:
                log.error("posting to %s failed: %s", channel, exc.response.get("error"))
                return False
        return True

    def react(self, method: str, channel: str, ts: str, name: str = WORKING_REACTION) -> None:
        """Add or remove a reaction ("working on it", a quiet refusal's, an expert's answer taken);
        failing to must not stop what it marks."""
        try:
            getattr(self.client, method)(channel=channel, timestamp=ts, name=name)
        except SlackApiError as exc:
            log.debug("%s failed: %s", method, exc.response.get("error"))


def ids(body: dict[str, Any]) -> tuple[str, str, str]:
    """(channel, user, team) of an interaction payload."""
    user = body.get("user") or {}
    team = str((body.get("team") or {}).get("id") or user.get("team_id") or "")
    return str((body.get("channel") or {}).get("id", "")), str(user.get("id", "")), team
