"""Refusals of access to `groundbot serve`'s HTTP routes, kept as rows (Alembic revision 0010):
who was refused (a token's holder by name, never the token), on which route, asking for which
scope, why and when. An operator reads them to see a widget probing scopes it does not hold.

Why coalesced: a caller without a token can send refusals as fast as the port takes requests,
and each row is a write in the database the turns share. So one key (route, who, scope, reason)
is written at most once per `min_interval_s` per worker; the refusals between two of its rows
are counted in the later row's `repeats`, none is lost from the count.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

from sqlalchemy.engine import Engine
from sqlmodel import Field, Session, SQLModel, col, select

from storage.records.database import Pruner, utcnow


class AccessRefusal(SQLModel, table=True):
    """One refused request (or several alike, `repeats` + 1), as the route answered it."""

    __tablename__ = "access_refusal"
    id: int | None = Field(default=None, primary_key=True)
    at: datetime = Field(default_factory=utcnow, index=True)
    route: str  # "api_ask" or "review"
    who: str  # "none" (no or a wrong token), "global", "open" or "scope:<name>"
    scope: str = ""  # the scope asked for: a configured one's name, "" (none named) or "(unknown)"
    reason: str  # a short code: no_token, wrong_token, token_in_url, scope_not_allowed, ...
    status: int  # the HTTP status answered
    repeats: int = 0  # refusals of the same key not written as rows of their own since the previous one


Key = tuple[str, str, str, str]


class AccessLog:
    """Writes access refusals, at most one row per key and `min_interval_s`; prunes old rows."""

    def __init__(self, engine: Engine, *, min_interval_s: float = 1.0, keep_days: float = 90.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.engine = engine
        self.min_interval_s = min_interval_s
        self.clock = clock
        self._lock = threading.Lock()
        self._last: dict[Key, float] = {}
        self._held: dict[Key, int] = {}  # refusals not written yet, per key
        # rows older than keep_days are forgotten, at most once an hour
        self._prune = Pruner(engine, AccessRefusal, col(AccessRefusal.at), keep_days * 86400.0, clock, every_s=3600.0)

    def record(self, route: str, who: str, scope: str, reason: str, status: int) -> bool:
        """Count one refusal; True when it was written as a row (else it waits in `repeats`)."""
        key, now = (route, who, scope, reason), self.clock()
        with self._lock:
            if now - self._last.get(key, -1e18) < self.min_interval_s:
                self._held[key] = self._held.get(key, 0) + 1
                return False
            self._last[key] = now
            repeats = self._held.pop(key, 0)
        with Session(self.engine) as session:
            session.add(AccessRefusal(route=route, who=who, scope=scope, reason=reason, status=status,
                                      repeats=repeats))
            session.commit()
        self._prune()
        return True

    def recent(self, limit: int = 100) -> list[dict[str, Any]]:
        """The newest rows first, as dicts (for tests and an operator's look)."""
        with Session(self.engine) as session:
            rows = session.exec(select(AccessRefusal).order_by(col(AccessRefusal.id).desc()).limit(limit)).all()
            return [r.model_dump() for r in rows]
