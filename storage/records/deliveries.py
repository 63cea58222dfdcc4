"""Platform deliveries (Slack event ids, Telegram update ids, message timestamps) as rows of the
transcript database: a unique key, so a Slack retry or a re-delivered Telegram update reaching
any worker is answered once. Table created by Alembic revision 0003; claims by 0007.

A delivery is *claimed* (holder, claimed_at, the platform payload) before the platform is
acknowledged, and *done* only once its reply was sent and its turn recorded. The holder's
heartbeat renews its claims (storage/records/shared_state.py); a claim not renewed for `stale_s`
belonged to a worker that died, and the next worker to see it (a platform retry, or
`abandoned()` sweeping) takes it over and answers from the stored payload. Without that, an
acknowledged message died with its worker.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from sqlalchemy import JSON, Update, update
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.engine import CursorResult, Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import Field, Session, SQLModel, col, func, select

from storage.records.database import Pruner, utcnow, worker_id

log = logging.getLogger(__name__)



CLAIMED, DONE, FAILED = "claimed", "done", "failed"
PAYLOAD_TYPE = JSON(none_as_null=True).with_variant(JSONB(none_as_null=True), "postgresql")


class Claim(StrEnum):
    """What offering a delivery key found: answer it (NEW, TAKEN) or acknowledge and drop it."""

    NEW = "new"  # first offer: this worker holds it now
    TAKEN = "taken"  # its holder stopped renewing the claim (died): this worker holds it now
    BUSY = "busy"  # a live worker is answering it
    DONE = "done"  # answered (or given up on) already


class Delivery(SQLModel, table=True):
    """A platform delivery (Slack event id, Telegram update id, message ts): claimed while a
    worker answers it, done after; the payload lets another worker answer it if that one dies."""

    __tablename__ = "delivery"
    id: int | None = Field(default=None, primary_key=True)
    key: str = Field(unique=True, index=True)
    created_at: datetime = Field(default_factory=utcnow, index=True)
    state: str = Field(default=DONE, index=True)  # claimed | done | failed
    holder: str = ""  # the worker that claimed it last
    claimed_at: datetime | None = None  # renewed by the holder's heartbeat while it lives
    attempts: int = 1  # workers that claimed it (a delivery that kills every worker is given up)
    payload: dict[str, Any] | None = Field(default=None, sa_type=PAYLOAD_TYPE)  # the update / event body


class Deliveries:
    """Delivery de-duplication and claims over one engine, held as `holder` (a worker's id)."""

    def __init__(self, engine: Engine, holder: str | None = None, *, delivery_ttl_s: float = 7 * 86400.0,
                 stale_s: float = 15.0, max_attempts: int = 3, clock: Callable[[], float] = time.monotonic) -> None:
        self.engine = engine
        self.holder = holder or worker_id()
        self.stale_s = stale_s
        self.max_attempts = max_attempts
        self.clock = clock
        # deliveries older than delivery_ttl_s are forgotten, at most once a minute
        self._prune = Pruner(engine, Delivery, col(Delivery.created_at), delivery_ttl_s, clock)

    def first(self, key: str) -> bool:
        """True for the first worker that offers `key`; False for every repeat, on any worker."""
        self._prune()
        with Session(self.engine) as session:
            session.add(Delivery(key=key))
            try:
                session.commit()
            except IntegrityError:
                session.rollback()
                return False
        return True

    def claim(self, key: str, payload: dict[str, Any] | None = None) -> Claim:
        """Offer a delivery before acknowledging it: NEW or TAKEN means this worker must answer
        it and call `done(key)` after; BUSY and DONE mean acknowledge it and do nothing."""
        self._prune()
        with Session(self.engine) as session:
            session.add(Delivery(key=key, state=CLAIMED, holder=self.holder, claimed_at=utcnow(), payload=payload))
            try:
                session.commit()
                return Claim.NEW
            except IntegrityError:
                session.rollback()
        return self._take_over(key)

    def _take_over(self, key: str) -> Claim:
        """Take `key` if its holder stopped renewing the claim (atomic: one taker wins)."""
        with Session(self.engine) as session:
            result = session.execute(
                update(Delivery)
                .where(col(Delivery.key) == key, col(Delivery.state) == CLAIMED,
                       col(Delivery.claimed_at) < utcnow() - timedelta(seconds=self.stale_s),
                       col(Delivery.attempts) < self.max_attempts)
                .values(holder=self.holder, claimed_at=utcnow(), attempts=col(Delivery.attempts) + 1))
            session.commit()
            if _rows(result) == 1:
                log.warning("took over delivery %s from a worker that stopped", key)
                return Claim.TAKEN
            state = session.exec(select(Delivery.state).where(Delivery.key == key)).first()
        return Claim.BUSY if state == CLAIMED else Claim.DONE

    def done(self, key: str, state: str = DONE) -> None:
        """The delivery was answered (reply sent, turn recorded): no worker answers it again."""
        with Session(self.engine) as session:
            session.execute(update(Delivery).where(col(Delivery.key) == key).values(state=state, payload=None))
            session.commit()

    def abandoned(self, limit: int = 20, margin_s: float = 5.0) -> list[tuple[str, dict[str, Any]]]:
        """Claimed deliveries whose holder stopped renewing them, with their payloads, for a
        sweeper to answer (through `claim`, so one worker wins). `margin_s` lets keys the dead
        holder claimed just after (a Slack message's own key) go stale first. Deliveries already
        tried `max_attempts` times are marked failed instead."""
        before = utcnow() - timedelta(seconds=self.stale_s + margin_s)
        with Session(self.engine) as session:
            rows = session.exec(select(Delivery.key, Delivery.payload, Delivery.attempts).where(
                col(Delivery.state) == CLAIMED, col(Delivery.claimed_at) < before, col(Delivery.payload).is_not(None))
                .order_by(col(Delivery.id)).limit(limit)).all()
        out: list[tuple[str, dict[str, Any]]] = []
        for key, payload, attempts in rows:
            if attempts >= self.max_attempts:
                log.error("delivery %s was claimed %d times by workers that died; giving it up", key, attempts)
                self.done(key, FAILED)
            elif payload is not None:
                out.append((key, dict(payload)))
        return out

    def renewal(self, now: datetime) -> Update:
        """The statement that renews this worker's claims (run by the heartbeat)."""
        return (update(Delivery).where(col(Delivery.holder) == self.holder, col(Delivery.state) == CLAIMED)
                .values(claimed_at=now))

    def claims(self) -> dict[str, int]:
        """Deliveries by state (for tests and the load benchmark)."""
        with Session(self.engine) as session:
            rows = session.exec(select(Delivery.state, func.count()).group_by(col(Delivery.state))).all()
        return {str(state): int(n) for state, n in rows}


def _rows(result: Any) -> int:
    """Rows an UPDATE matched."""
    return int(result.rowcount) if isinstance(result, CursorResult) else 0
