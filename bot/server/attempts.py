"""Wrong credentials limited per client and per route, across workers: a client may not guess
tokens as fast as the workers answer.

A wrong credential is a bearer token that is no one's at `/api/ask` or `/metrics`, a wrong token
at `/review/login`, a bad Slack request signature, or a wrong Telegram secret token (a request
carrying none is not a guess; it is refused as before and not counted). A client address that
sends `[serve] wrong_credentials_per_client` of them within `wrong_credentials_window_s`, or a
route that receives `wrong_credentials_total` from all clients together, is locked for that
window: every request there that carries a credential gets 429 with `Retry-After` before its
credential is looked at, a right one too (else a 429 and a 200 would still tell a guesser which
guess was right). A right token from another client is served as ever, unless the route's total
is reached, which refuses everyone at that route for the window (a flood from many addresses).

The counts and locks are rows of the records database (storage/records/rate_events.py), so N
workers allow no more than one; until a worker's database is open it counts in its own memory.
Each 429 is counted in `groundbot_access_refused_total` (reason `too_many_attempts`) and kept in
the access log's rows; a log line is written when a lock is taken, once per lock and window.

The client is the TCP peer, or, when the peer is one of `[serve] trusted_proxies`, the address
the proxy's X-Forwarded-For names (uvicorn's ProxyHeadersMiddleware, bot/server/http_app.py): a
forwarded-for header from anyone else is ignored.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request

from bot.server.scope_access import NOBODY, Refused
from bot.settings import ServeSettings

if TYPE_CHECKING:
    from storage.records.rate_events import RateEvents

log = logging.getLogger("groundbot.access")

TOO_MANY = "too_many_attempts"


class LocalCounts:
    """The same counts and locks as RateEvents', in one process's memory (before the database
    is open, or while it is away)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._failures: dict[str, list[float]] = {}
        self._locks: dict[str, float] = {}
        self._lock = threading.Lock()

    def locked_s(self, keys: Sequence[str], window_s: float) -> float:
        now = self.clock()
        with self._lock:
            left = max((self._locks.get(k, -math.inf) + window_s - now for k in keys), default=0.0)
        return max(0.1, left) if left > 0 else 0.0

    def fail(self, limits: Mapping[str, int], window_s: float) -> list[str]:
        now, reached = self.clock(), []
        with self._lock:
            for key, limit in limits.items():
                recent = [t for t in self._failures.get(key, []) if t > now - window_s] + [now]
                self._failures[key] = recent[-max(limit, 1):]  # no more than the limit is ever needed
                if 0 < limit <= len(recent) and self._locks.get(key, -math.inf) <= now - window_s:
                    self._locks[key] = now
                    reached.append(key)
            if len(self._failures) > 10_000:  # bounded: clients of long ago forgotten
                self._failures = {k: v for k, v in self._failures.items() if v[-1] > now - window_s}
                self._locks = {k: t for k, t in self._locks.items() if t > now - window_s}
        return reached


class Attempts:
    """The lock check before a credential is looked at, and the count of a wrong one."""

    def __init__(self, serve: ServeSettings, shared: Callable[[], RateEvents | None] = lambda: None) -> None:
        self.per_client = serve.wrong_credentials_per_client
        self.total = serve.wrong_credentials_total
        self.window_s = serve.wrong_credentials_window_s
        self.shared = shared  # the worker's rate-event rows once its database is open
        self.local = LocalCounts()

    @property
    def enabled(self) -> bool:
        return self.per_client > 0 or self.total > 0

    @staticmethod
    def client(request: Request) -> str:
        """The client's address (a trusted proxy's forwarded-for already applied)."""
        return request.client.host if request.client is not None and request.client.host else "unknown"

    def _keys(self, route: str, client: str) -> dict[str, int]:
        return {f"client:{client}": self.per_client, f"route:{route}": self.total}

    def _store(self) -> RateEvents | LocalCounts:
        return self.shared() or self.local

    def locked(self, route: str, client: str) -> Refused | None:
        """The 429 for a locked client or route, else None (the route records the refusal)."""
        if not self.enabled:
            return None
        keys = list(self._keys(route, client))
        try:
            left = self._store().locked_s(keys, self.window_s)
        except Exception as exc:  # the database is away: this worker's own counts stand in
            log.warning("wrong-credential locks not read: %s", type(exc).__name__)
            left = self.local.locked_s(keys, self.window_s)
        if not left:
            return None
        return Refused(429, TOO_MANY, "too many wrong credentials; try again later", NOBODY,
                       retry_after=math.ceil(left))

    def wrong(self, route: str, client: str) -> None:
        """Count one wrong credential from `client` at `route`; log a lock it takes."""
        if not self.enabled:
            return
        limits = self._keys(route, client)
        try:
            reached = self._store().fail(limits, self.window_s)
        except Exception as exc:
            log.warning("wrong credential not counted in the database: %s", type(exc).__name__)
            reached = self.local.fail(limits, self.window_s)
        for key in reached:
            kind, _, name = key.partition(":")
            limit = limits[key]
            log.warning("%s %s sent %d wrong credentials within %.0f s: refused with 429 for %.0f s (last at %s)",
                        "client" if kind == "client" else "route", name, limit, self.window_s, self.window_s, route,
                        extra={"route": route, "client": client, "lock": kind, "reason": TOO_MANY})

    async def check(self, route: str, request: Request) -> Refused | None:
        return await run_in_threadpool(self.locked, route, self.client(request))

    async def count(self, route: str, request: Request) -> None:
        await run_in_threadpool(self.wrong, route, self.client(request))
