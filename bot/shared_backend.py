"""The backend `groundbot serve` hands its front ends: the App, with the state every worker
must agree on taken from database rows instead of process memory, and every turn counted.

- a turn holds its conversation's lease, so one conversation is answered one turn at a time and
  in order whichever worker receives each message;
- Telegram's per-user rate limit and reply-thread map are rows (storage/shared_state.py);
- Slack's once-filter (event ids, message timestamps, button presses) is the delivery table;
  events and messages are claimed there until answered (a dead worker's are taken over).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from bot.app import App
from bot.metrics import Metrics
from core.messages import Decision, Incoming
from core.ports import Delivery
from core.replies import Reply
from storage.shared_state import Claim, SharedState

log = logging.getLogger("groundbot.turns")


class SharedBackend:
    """Backend port over an App: conversation leases around turns, metrics on every outcome."""

    def __init__(self, app: App, state: SharedState, metrics: Metrics, *, turn_wait_s: float = 120.0) -> None:
        self.app = app
        self.state = state
        self.metrics = metrics
        self.turn_wait_s = turn_wait_s

    def ask(self, msg: Incoming) -> Decision:
        with self.state.conversation(msg.key.as_str(), self.turn_wait_s):
            decision = self.app.ask(msg)
        self.metrics.observe(decision)
        # one line per turn; with [log] format = "json" it carries the ids to find the turn by
        log.info("turn %s", "refused" if decision.refused else "answered",
                 extra={"turn_uid": decision.turn_uid, "conversation": msg.key.as_str(),
                        "reason": decision.refusal_reason or "", "status": decision.status,
                        "latency_ms": round(float(decision.latency_ms.get("total", 0.0)), 1)})
        return decision

    def admin_reingest(self, platform: str, user_id: str, paths: Sequence[str] | None = None,
                       progress: Callable[[str, int, int], None] | None = None) -> Any:
        try:
            summary = self.app.admin_reingest(platform, user_id, paths, progress)
        except PermissionError:  # not an admin, or a path outside the allowed roots: nothing ran
            self.metrics.ingest_runs.labels("refused").inc()
            raise
        except Exception:
            self.metrics.ingest_runs.labels("failed").inc()
            raise
        self.metrics.ingest_runs.labels("ok").inc()
        return summary

    def admin_stats(self, platform: str, user_id: str) -> dict[str, Any]:
        return self.app.admin_stats(platform, user_id)

    def admin_review_queue(self, platform: str, user_id: str) -> list[dict[str, Any]]:
        return self.app.admin_review_queue(platform, user_id)

    def record_feedback(self, turn_id: int, user_id: str, value: int, comment: str = "", reason: str = "") -> bool:
        stored = self.app.record_feedback(turn_id, user_id, value, comment, reason)
        if stored:
            self.metrics.feedback.labels("up" if value > 0 else "down").inc()
        return stored

    def command(self, platform: str, user_id: str, name: str, args: str = "",
                progress: Callable[[str, int, int], None] | None = None) -> Reply:
        return self.app.command(platform, user_id, name, args, progress)

    def review(self, platform: str, user_id: str, action: str, item_id: int | None, text: str = "") -> Reply:
        return self.app.review(platform, user_id, action, item_id, text)

    def feedback(self, user_id: str, turn_id: int, value: int, reason: str = "", comment: str = "",
                 lang: str = "") -> Reply:
        reply = self.app.feedback(user_id, turn_id, value, reason, comment, lang)
        if reply.ok:
            self.metrics.feedback.labels("up" if value > 0 else "down").inc()
        return reply

    def register_delivery(self, platform: str, delivery: Delivery) -> None:
        self.app.register_delivery(platform, delivery)

    def is_admin(self, platform: str, user_id: str) -> bool:
        return self.app.is_admin(platform, user_id)


class SharedOnce:
    """The Slack adapter's once-filter over the delivery table, counting what it skips."""

    def __init__(self, state: SharedState, metrics: Metrics, platform: str) -> None:
        self.state = state
        self.metrics = metrics
        self.platform = platform
        self._taken: set[str] = set()  # keys this worker took over and has not marked done yet

    def first(self, key: str) -> bool:
        if self.state.first_delivery(f"{self.platform}:{key}"):
            return True
        self.metrics.deliveries_skipped.labels(self.platform).inc()
        return False

    def claim(self, key: str, payload: dict[str, Any] | None = None) -> bool:
        claim = self.state.claim(f"{self.platform}:{key}", payload)
        if claim is Claim.TAKEN:
            self._taken.add(key)
            if key.startswith("event:"):  # not again for the event's message key
                self.metrics.deliveries_taken_over.labels(self.platform).inc()
        if claim in (Claim.NEW, Claim.TAKEN):
            return True
        self.metrics.deliveries_skipped.labels(self.platform).inc()
        return False

    def done(self, key: str) -> None:
        if key:
            self.state.done(f"{self.platform}:{key}")
            self._taken.discard(key)

    def taken_over(self, key: str) -> bool:
        return key in self._taken


class SharedThreads:
    """Telegram's reply-thread map as rows: a reply to a bot message continues its thread on any worker."""

    def __init__(self, state: SharedState, platform: str = "telegram") -> None:
        self.state = state
        self.platform = platform

    def remember(self, chat_id: int, message_id: int, thread: str) -> None:
        self.state.remember_thread(f"{self.platform}:{chat_id}:{message_id}", thread)

    def get(self, chat_id: int, message_id: int) -> str | None:
        return self.state.thread_of(f"{self.platform}:{chat_id}:{message_id}")


class SharedRateLimit:
    """Per-user questions per minute counted in rows, so N workers allow N times nothing more."""

    def __init__(self, state: SharedState, per_minute: int, platform: str = "telegram") -> None:
        self.state = state
        self.per_minute = per_minute
        self.platform = platform

    def wait_s(self, user_id: str) -> float:
        return self.state.rate_wait_s(f"{self.platform}:{user_id}", self.per_minute)
