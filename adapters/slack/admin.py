"""Admin slash commands: /groundbot-reingest (progress edited in one channel message),
/groundbot-stats and /groundbot-review (answered privately, the queue with its buttons).
The backend's command layer runs them and refuses non-admins; this only renders."""

from __future__ import annotations

import logging
import shlex
import time
from collections.abc import Callable
from typing import Any

from slack_bolt import App as BoltApp
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from adapters.slack.rendering import reply_blocks, truncate
from adapters.slack.wiring import PLATFORM, Wiring
from core.catalogue import say

log = logging.getLogger("groundbot.slack")

REINGEST_COMMAND = "/groundbot-reingest"
STATS_COMMAND = "/groundbot-stats"
REVIEW_COMMAND = "/groundbot-review"


class AdminCommands:
    """The slash commands; the backend's command layer decides and refuses non-admins."""

    def __init__(self, wiring: Wiring) -> None:
        self.w = wiring

    def register(self, app: BoltApp) -> None:
        app.command(REINGEST_COMMAND)(self.on_reingest)
        app.command(STATS_COMMAND)(self.on_command)
        app.command(REVIEW_COMMAND)(self.on_command)

    def refuse_non_admin(self, ack: Callable[..., Any], command: dict[str, Any], name: str) -> bool:
        """Non-admins get the command layer's refusal as the ack; True when the caller must stop."""
        user, channel = str(command.get("user_id", "")), str(command.get("channel_id", ""))
        if self.w.backend.is_admin(PLATFORM, user, channel):
            return False
        ack(text=self.w.backend.command(PLATFORM, user, name, chat_id=channel).text)
        return True

    def on_reingest(self, ack: Callable[..., Any], command: dict[str, Any], respond: Callable[..., Any]) -> None:
        if self.refuse_non_admin(ack, command, "reingest"):
            return
        raw = str(command.get("text") or "").strip()
        try:
            paths = shlex.split(raw)
        except ValueError:
            paths = raw.split()
        ack(text=" ".join([say("reingest_started"), *paths]))
        user, channel = str(command.get("user_id")), str(command.get("channel_id"))
        report = ProgressReport(self.w.client, channel, respond, self.w.progress_interval_s)
        report.start(f"<@{user}> {say('reingest_started')}")
        reply = self.w.backend.command(PLATFORM, user, "reingest", " ".join(shlex.quote(p) for p in paths), report,
                                       channel)
        report.finish(reply.text)

    def on_command(self, ack: Callable[..., Any], command: dict[str, Any], respond: Callable[..., Any]) -> None:
        """/groundbot-stats and /groundbot-review: ack first (stats read the whole transcript
        table), then the reply privately, with the queue's buttons."""
        name = str(command.get("command", "")).removeprefix("/groundbot-")
        if self.refuse_non_admin(ack, command, name):
            return
        ack()
        reply = self.w.backend.command(PLATFORM, str(command.get("user_id")), name, str(command.get("text") or ""),
                                       chat_id=str(command.get("channel_id", "")))
        respond(text=truncate(reply.text, 3000), blocks=reply_blocks(reply), response_type="ephemeral")


class ProgressReport:
    """One message in the channel, edited as the re-ingest advances (at most every `interval` s)."""

    def __init__(self, client: WebClient, channel: str, respond: Callable[..., Any], interval: float) -> None:
        self.client = client
        self.channel = channel
        self.respond = respond
        self.interval = interval
        self.ts = ""
        self._last = 0.0

    def start(self, text: str) -> None:
        try:
            self.ts = str(self.client.chat_postMessage(channel=self.channel, text=text)["ts"])
        except SlackApiError as exc:  # e.g. a private channel the bot is not in
            log.warning("cannot post re-ingest progress in %s: %s", self.channel, exc.response.get("error"))
        self._last = time.monotonic()

    def __call__(self, phase: str, done: int, total: int) -> None:
        now = time.monotonic()
        if not self.ts or now - self._last < self.interval:
            return
        self._last = now
        self._update(say("reingest_progress", phase=phase, done=done, total=total))

    def finish(self, text: str) -> None:
        if not self.ts or not self._update(text):
            self.respond(text=text, response_type="ephemeral")

    def _update(self, text: str) -> bool:
        try:
            self.client.chat_update(channel=self.channel, ts=self.ts, text=text)
            return True
        except SlackApiError as exc:
            log.warning("cannot update re-ingest progress: %s", exc.response.get("error"))
            return False
