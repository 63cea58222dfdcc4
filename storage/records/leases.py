"""Leases as rows of the transcript database (the `conversation_lease` table, Alembic revision
0003): one turn of a conversation at a time, whichever worker holds it; a source's sync uses
the same table (storage/records/source_state.py). A lease left by a killed worker expires after
`lease_s`; a live one is renewed by its holder's heartbeat (storage/records/shared_state.py).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta

from sqlalchemy import Update, delete, update
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import Field, Session, SQLModel, col

from storage.records.database import utcnow, worker_id

log = logging.getLogger(__name__)



class ConversationLease(SQLModel, table=True):
    """Held while one worker runs a turn of the conversation; expires if that worker dies."""

    __tablename__ = "conversation_lease"
    key: str = Field(primary_key=True)
    holder: str
    expires_at: datetime


class ConversationLeases:
    """Leases over one engine, held as `holder` (a worker's id) for `lease_s` at a time."""

    def __init__(self, engine: Engine, holder: str | None = None, *, lease_s: float = 60.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.engine = engine
        self.holder = holder or worker_id()
        self.lease_s = lease_s
        self.clock = clock

    @contextmanager
    def conversation(self, key: str, wait_s: float = 120.0) -> Iterator[None]:
        """Run the body while holding `key`'s lease: one turn of a conversation at a time across
        all workers. A lease left by a killed worker expires after `lease_s`."""
        if not self._acquire(key, wait_s):
            raise TimeoutError(f"conversation {key} stayed busy for {wait_s:.0f} s")
        try:
            yield
        finally:
            self._release(key)

    def _acquire(self, key: str, wait_s: float) -> bool:
        deadline = self.clock() + wait_s
        pause = 0.01
        while not self.try_lease(key):
            if self.clock() >= deadline:
                return False
            time.sleep(pause)
            pause = min(pause * 1.5, 0.2)
        return True

    def try_lease(self, key: str) -> bool:
        """Take `key`'s lease for `lease_s` if nobody holds it (or its holder let it expire)."""
        with Session(self.engine) as session:
            now = utcnow()
            session.execute(delete(ConversationLease).where(col(ConversationLease.key) == key,
                                                            col(ConversationLease.expires_at) < now))
            session.add(ConversationLease(key=key, holder=self.holder, expires_at=now + timedelta(seconds=self.lease_s)))
            try:
                session.commit()
                return True
            except IntegrityError:
                session.rollback()
                return False

    def renew_lease(self, key: str) -> None:
        """Another `lease_s` for a lease this worker holds (a long job's heartbeat)."""
        with Session(self.engine) as session:
            session.execute(update(ConversationLease).where(col(ConversationLease.key) == key,
                                                            col(ConversationLease.holder) == self.holder)
                            .values(expires_at=utcnow() + timedelta(seconds=self.lease_s)))
            session.commit()

    def renewal(self, now: datetime) -> Update:
        """The statement that gives every lease this worker holds another `lease_s` (run by the heartbeat)."""
        return (update(ConversationLease).where(col(ConversationLease.holder) == self.holder)
                .values(expires_at=now + timedelta(seconds=self.lease_s)))

    def _release(self, key: str) -> None:
        try:
            self.release_lease(key)
        except Exception as exc:  # the lease expires on its own; never fail a finished turn over it
            log.warning("could not release conversation lease %s: %s", key, str(exc).splitlines()[0][:200])

    def release_lease(self, key: str) -> None:
        with Session(self.engine) as session:
            session.execute(delete(ConversationLease).where(col(ConversationLease.key) == key,
                                                            col(ConversationLease.holder) == self.holder))
            session.commit()
