"""What `groundbot serve` adds to the App its front ends share: the state every worker must agree
on taken from database rows instead of process memory, and every turn and event counted.

- a turn holds its conversation's lease, so one conversation is answered one turn at a time and
  in order whichever worker receives each message;
- Telegram's per-user rate limit and reply-thread map are rows (storage/records/rate_events.py,
  storage/records/reply_threads.py);
- Slack's once-filter (event ids, message timestamps, button presses) is the delivery table;
  events and messages are claimed there until answered (a dead worker's are taken over).
"""

from __future__ import annotations

import logging
from typing import Any

from bot.server.metrics import Metrics
from bot.services.hooks import Hooks, TurnHandler
from core.messages import Decision, Incoming, Platform
from storage.records.deliveries import Claim, Deliveries
from storage.records.leases import ConversationLeases
from storage.records.rate_events import RateEvents
from storage.records.reply_threads import ReplyThreads

log = logging.getLogger("groundbot.turns")


def serve_hooks(hooks: Hooks, leases: ConversationLeases, metrics: Metrics, *, turn_wait_s: float = 120.0) -> None:
    """Register what `groundbot serve` adds to every turn and event on the App's hooks: the
    conversation lease around a turn, the turn counted and logged, ingest runs and votes counted."""

    def lease(msg: Incoming, next_: TurnHandler) -> Decision:
        with leases.conversation(msg.key.as_str(), turn_wait_s):
            return next_(msg)

    def observe(msg: Incoming, next_: TurnHandler) -> Decision:
        decision = next_(msg)
        metrics.observe(decision)
        # one line per turn; with [log] format = "json" it carries the ids to find the turn by
        log.info("turn %s", "refused" if decision.refused else "answered",
                 extra={"turn_uid": decision.turn_uid, "conversation": msg.key.as_str(),
                        "reason": decision.refusal_reason or "", "status": decision.status,
                        "latency_ms": round(float(decision.latency_ms.get("total", 0.0)), 1)})
        return decision

    hooks.around_turn("lease", lease)
    hooks.around_turn("observe", observe)
    # counted first: the App's own listeners check the suggestions again after an ingest or a sync
    hooks.ingest.insert(0, lambda result: metrics.ingest_runs.labels(result).inc())
    hooks.vote.insert(0, lambda value: metrics.feedback.labels("up" if value > 0 else "down").inc())
    hooks.sync.insert(0, metrics.observe_sync)


class SharedOnce:
    """The Slack adapter's once-filter over the delivery table, counting what it skips."""

    def __init__(self, deliveries: Deliveries, metrics: Metrics, platform: Platform) -> None:
        self.deliveries = deliveries
        self.metrics = metrics
        self.platform = platform
        self._taken: set[str] = set()  # keys this worker took over and has not marked done yet

    def first(self, key: str) -> bool:
        if self.deliveries.first(f"{self.platform}:{key}"):
            return True
        self.metrics.deliveries_skipped.labels(self.platform).inc()
        return False

    def claim(self, key: str, payload: dict[str, Any] | None = None) -> bool:
        claim = self.deliveries.claim(f"{self.platform}:{key}", payload)
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
            self.deliveries.done(f"{self.platform}:{key}")
            self._taken.discard(key)

    def taken_over(self, key: str) -> bool:
        return key in self._taken


class SharedThreads:
    """Telegram's reply-thread map as rows: a reply to a bot message continues its thread on any worker."""

    def __init__(self, threads: ReplyThreads, platform: Platform = Platform.TELEGRAM) -> None:
        self.threads = threads
        self.platform = platform

    def remember(self, chat_id: int, message_id: int, thread: str) -> None:
        self.threads.remember(f"{self.platform}:{chat_id}:{message_id}", thread)

    def get(self, chat_id: int, message_id: int) -> str | None:
        return self.threads.thread_of(f"{self.platform}:{chat_id}:{message_id}")


class SharedRateLimit:
    """Per-user questions per minute counted in rows, so N workers allow N times nothing more."""

    def __init__(self, rates: RateEvents, per_minute: int, platform: Platform = Platform.TELEGRAM) -> None:
        self.rates = rates
        self.per_minute = per_minute
        self.platform = platform

    def wait_s(self, user_id: str) -> float:
        return self.rates.rate_wait_s(f"{self.platform}:{user_id}", self.per_minute)


class SharedChatRate:
    """Messages answered without a mention per chat and minute, counted in rows every worker sees."""

    def __init__(self, rates: RateEvents) -> None:
        self.rates = rates

    def allow(self, chat: str, per_minute: int) -> bool:
        return self.rates.rate_wait_s(f"auto:{chat}", per_minute) == 0.0
