"""Per-user rate limits and wrong-credential counts as rows of the transcript database (the
`rate_event` table, Alembic revision 0003): a sliding window over rows, so every worker sees
the same count, and a lock one worker takes holds on all of them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta

from sqlalchemy.engine import Engine
from sqlmodel import Field, Session, SQLModel, col, func, select

from storage.records.database import Pruner, aware, utcnow


class RateEvent(SQLModel, table=True):
    """One question counted against a user's per-minute limit."""

    __tablename__ = "rate_event"
    id: int | None = Field(default=None, primary_key=True)
    subject: str = Field(index=True)
    created_at: datetime = Field(default_factory=utcnow, index=True)


class RateEvents:
    """Questions per minute, wrong-credential failures and the locks they take, over one engine."""

    def __init__(self, engine: Engine, *, events_keep_s: float = 120.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        """`events_keep_s`: how long rate-limit and failure events are kept (the longest window)."""
        self.engine = engine
        self.events_keep_s = max(120.0, events_keep_s)
        self.clock = clock
        # events older than events_keep_s are forgotten, at most once a minute
        self._prune = Pruner(engine, RateEvent, col(RateEvent.created_at), self.events_keep_s, clock)

    # -- rate limits -------------------------------------------------------------------
    def rate_wait_s(self, subject: str, per_minute: int) -> float:
        """0 if `subject` may ask now (and counts it), else the seconds until it may: a sliding
        one-minute window over rows, so every worker sees the same count."""
        if per_minute <= 0:
            return 0.0
        self._prune()
        since = utcnow() - timedelta(seconds=60)
        with Session(self.engine) as session:
            recent = session.exec(select(RateEvent.created_at).where(RateEvent.subject == subject,
                                                                     col(RateEvent.created_at) >= since)
                                  .order_by(col(RateEvent.created_at))).all()
            if len(recent) >= per_minute:
                oldest = aware(recent[0])
                return max(0.1, 60.0 - (utcnow() - oldest).total_seconds())
            session.add(RateEvent(subject=subject))
            session.commit()
        return 0.0

    # -- locks after repeated failures (wrong credentials) ------------------------------------
    def locked_s(self, keys: Sequence[str], window_s: float) -> float:
        """Seconds left of the newest lock on any of `keys` (a lock lasts `window_s` from when
        `fail` took it); 0 when none holds. One query, whichever worker took the lock."""
        since = utcnow() - timedelta(seconds=window_s)
        with Session(self.engine) as session:
            newest = session.exec(select(func.max(RateEvent.created_at)).where(
                col(RateEvent.subject).in_([f"lock:{k}" for k in keys]), col(RateEvent.created_at) >= since)).first()
        if newest is None:
            return 0.0
        return max(0.1, window_s - (utcnow() - aware(newest)).total_seconds())

    def fail(self, limits: Mapping[str, int], window_s: float) -> list[str]:
        """Count one failure against each key of `limits`; the keys whose failures within
        `window_s` reached their limit now (a limit of 0 never does), each locked from now for
        `window_s`. The caller asks `locked_s` first and counts nothing while locked, so after a
        lock a key's count starts again from none."""
        self._prune()
        since = utcnow() - timedelta(seconds=window_s)
        subjects = [f"fail:{k}" for k in limits]
        with Session(self.engine) as session:
            session.add_all([RateEvent(subject=s) for s in subjects])
            session.flush()
            counts = dict(session.exec(select(RateEvent.subject, func.count()).where(
                col(RateEvent.subject).in_(subjects), col(RateEvent.created_at) >= since)
                .group_by(col(RateEvent.subject))).all())
            locked = set(session.exec(select(RateEvent.subject).where(
                col(RateEvent.subject).in_([f"lock:{k}" for k in limits]), col(RateEvent.created_at) >= since)).all())
            reached = [k for k, limit in limits.items()  # a request that passed the check before the lock: no second one
                       if 0 < limit <= counts.get(f"fail:{k}", 0) and f"lock:{k}" not in locked]
            session.add_all([RateEvent(subject=f"lock:{k}") for k in reached])
            session.commit()
        return reached
