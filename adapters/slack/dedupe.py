"""Each Slack event, message and button press is handled once: Slack redelivers an event it
did not see acked in time, and one user message can arrive as both `app_mention` and `message`."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

from cachetools import TTLCache
from slack_bolt import BoltResponse

log = logging.getLogger("groundbot.slack")


class OnceKeys(Protocol):
    """Says whether a key (event id, message ts, button press) is offered for the first time.

    `claim` is `first` for work that must survive its worker: True means answer it and call
    `done(key)` after; shared rows let another worker take a claim over if this one dies, and
    `taken_over(key)` then says so (the dead worker may have answered before it died)."""

    def first(self, key: str) -> bool: ...

    def claim(self, key: str, payload: dict[str, Any] | None = None) -> bool: ...

    def done(self, key: str) -> None: ...

    def taken_over(self, key: str) -> bool: ...


class OnceFilter:
    """Remembers keys for `ttl` seconds so a redelivered Slack event is handled only once.

    Memory is per process, which covers Slack's retries (they come within minutes to the same
    app); `groundbot serve` uses database rows every worker shares instead.
    """

    def __init__(self, ttl: float = 3600.0, max_keys: int = 50_000,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl = ttl
        self.max_keys = max_keys
        # the oldest keys go first when it is full; a key older than `ttl` is forgotten
        self._seen: TTLCache[str, bool] = TTLCache(maxsize=max_keys, ttl=ttl, timer=clock)
        self._lock = threading.Lock()

    def first(self, key: str) -> bool:
        """True the first time `key` is offered (within the ttl), False on repeats."""
        with self._lock:
            if key in self._seen:
                return False
            self._seen[key] = True
            return True

    def claim(self, key: str, payload: dict[str, Any] | None = None) -> bool:
        """In one process a claim is a first offer: nobody else could take it over."""
        return self.first(key)

    def done(self, key: str) -> None:
        """Nothing to release in memory."""

    def taken_over(self, key: str) -> bool:
        """One process never takes a claim over from another."""
        return False


def event_key(body: dict[str, Any]) -> str:
    """The once-key of an Events API callback ("" for anything else)."""
    event_id = body.get("event_id") if body.get("type") == "event_callback" else None
    return f"event:{event_id}" if event_id else ""


def skip_redelivered(once: OnceKeys,
                     ignored: Callable[[dict[str, Any], str], bool] = lambda body, bot: False) -> Callable[..., BoltResponse]:
    """bolt middleware: ack a redelivered event (same event id) without handling it again.
    The event is claimed with its body before bolt acks it; the listener marks it done. An event
    `ignored(body, bot_user_id)` says no listener takes (a message of no kind,
    adapters/slack/kinds.py) is acked at once, unclaimed."""

    def middleware(body: dict[str, Any], context: dict[str, Any], next_: Callable[[], BoltResponse]) -> BoltResponse:
        if ignored(body, str(context.get("bot_user_id") or "")):
            return BoltResponse(status=200, body="")
        key = event_key(body)
        if key and not once.claim(key, body):
            event_id = body.get("event_id")
            log.info("skipping redelivered event %s", event_id)
            return BoltResponse(status=200, body="")
        return next_()

    return middleware
