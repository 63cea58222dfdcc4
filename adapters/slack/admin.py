"""Admin slash commands: /groundbot-reingest (progress edited in one channel message),
/groundbot-stats and /groundbot-review (answered privately). Non-admins get an ephemeral
refusal and nothing runs; the backend checks the admin list again."""

from __future__ import annotations

import logging
import shlex
import time
from collections.abc import Callable
from typing import Any

from slack_bolt import App as BoltApp
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from adapters.slack.handlers import PLATFORM, Wiring
from adapters.slack.rendering import review_text, stats_text
from core.ports import PathNotAllowed

log = logging.getLogger("groundbot.slack")

REINGEST_COMMAND = "/groundbot-reingest"
STATS_COMMAND = "/groundbot-stats"
REVIEW_COMMAND = "/groundbot-review"


class AdminCommands:
    """The slash commands only admins may run."""

    def __init__(self, wiring: Wiring) -> None:
        self.w = wiring

    def register(self, app: BoltApp) -> None:
        app.command(REINGEST_COMMAND)(self.on_reingest)
        app.command(STATS_COMMAND)(self.on_stats)
        app.command(REVIEW_COMMAND)(self.on_review)

    def refuse_non_admin(self, ack: Callable[..., Any], command: dict[str, Any]) -> bool:
        """Ephemeral refusal for non-admins; True when the caller must stop (nothing has run)."""
        if self.w.backend.is_admin(PLATFORM, str(command.get("user_id", ""))):
            return False
        ack(text=f"Sorry, only groundbot admins can use {command.get('command')}. Nothing was run.")
        return True

    def on_reingest(self, ack: Callable[..., Any], command: dict[str, Any], respond: Callable[..., Any]) -> None:
        if self.refuse_non_admin(ack, command):
            return
        raw = str(command.get("text") or "").strip()
        try:
            paths = shlex.split(raw) or None
        except ValueError:
            paths = raw.split() or None
        where = ", ".join(paths) if paths else "the configured knowledge base"
        ack(text=f"Re-ingesting {where}; progress follows in this channel.")
        user, channel = str(command.get("user_id")), str(command.get("channel_id"))
        report = ProgressReport(self.w.client, channel, respond, self.w.progress_interval_s)
        report.start(f"<@{user}> started a re-ingest of {where}…")
        try:
            summary = self.w.backend.admin_reingest(PLATFORM, user, paths, report)
        except PathNotAllowed as exc:
            report.finish(f"Re-ingest refused: {exc}")
            return
        except PermissionError:
            report.finish("Re-ingest refused: you are not a groundbot admin.")
            return
        except Exception as exc:
            log.exception("re-ingest failed")
            report.finish(f"Re-ingest of {where} failed: {type(exc).__name__}: {exc}")
            return
        report.finish(f"Re-ingest of {where} done: {summary.line()}")

    def on_stats(self, ack: Callable[..., Any], command: dict[str, Any], respond: Callable[..., Any]) -> None:
        self.report(ack, command, respond, lambda user: stats_text(self.w.backend.admin_stats(PLATFORM, user)))

    def on_review(self, ack: Callable[..., Any], command: dict[str, Any], respond: Callable[..., Any]) -> None:
        self.report(ack, command, respond, lambda user: review_text(self.w.backend.admin_review_queue(PLATFORM, user)))

    def report(self, ack: Callable[..., Any], command: dict[str, Any], respond: Callable[..., Any],
               build: Callable[[str], str]) -> None:
        """Ack first (stats read the whole transcript table), then answer privately via response_url."""
        if self.refuse_non_admin(ack, command):
            return
        ack()
        try:
            text = build(str(command.get("user_id")))
        except PermissionError:
            text = f"Sorry, only groundbot admins can use {command.get('command')}."
        except Exception as exc:
            log.exception("%s failed", command.get("command"))
            text = f"{command.get('command')} failed: {type(exc).__name__}"
        respond(text=text, response_type="ephemeral")


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
        self._update(f"Re-ingesting… {phase}: {done}/{total}")

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
