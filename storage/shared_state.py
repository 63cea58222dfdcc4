"""State several `groundbot serve` workers must agree on, kept as rows in the transcript database.

A worker's memory is lost when it restarts and is invisible to its siblings, so anything that
decides whether or how a message is answered lives here instead: platform deliveries already
taken (a unique key, so a Slack retry or a re-delivered Telegram update reaching any worker is
answered once), per-user rate-limit events, the reply-thread map (which conversation a bot
message belongs to) and conversation leases (one turn of a conversation at a time, whichever
worker holds it). Tables are created by Alembic revision 0003.
"""

from __future__ import annotations

import logging
import os
import socket
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta

from sqlalchemy import delete
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import Field, Session, SQLModel, col, func, select

log = logging.getLogger(__name__)


def _now() -> datetime:
    return datetime.now(UTC)


class Delivery(SQLModel, table=True):
    """A platform delivery (Slack event id, Telegram update id, message ts) already taken."""

    __tablename__ = "delivery"
    id: int | None = Field(default=None, primary_key=True)
    key: str = Field(unique=True, index=True)
    created_at: datetime = Field(default_factory=_now, index=True)


class RateEvent(SQLModel, table=True):
    """One question counted against a user's per-minute limit."""

    __tablename__ = "rate_event"
    id: int | None = Field(default=None, primary_key=True)
    subject: str = Field(index=True)
    created_at: datetime = Field(default_factory=_now, index=True)


class ReplyThread(SQLModel, table=True):
    """The conversation thread a bot message belongs to, so a reply to it continues that thread."""

    __tablename__ = "reply_thread"
    id: int | None = Field(default=None, primary_key=True)
    key: str = Field(unique=True, index=True)  # platform:chat:message
    thread: str
    created_at: datetime = Field(default_factory=_now)


class ConversationLease(SQLModel, table=True):
    """Held while one worker runs a turn of the conversation; expires if that worker dies."""

    __tablename__ = "conversation_lease"
    key: str = Field(primary_key=True)
    holder: str
    expires_at: datetime


def _aware(value: datetime) -> datetime:
    """SQLite hands datetimes back naive; they were written in UTC."""
    return value if value.tzinfo else value.replace(tzinfo=UTC)


class SharedState:
    """Delivery de-duplication, rate limits, reply threads and conversation leases over one engine."""

    def __init__(self, engine: Engine, *, lease_s: float = 60.0, delivery_ttl_s: float = 7 * 86400.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.engine = engine
        self.lease_s = lease_s
        self.delivery_ttl_s = delivery_ttl_s
        self.clock = clock
        self.holder = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._last_prune = 0.0

    # -- deliveries ------------------------------------------------------------------
    def first_delivery(self, key: str) -> bool:
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

    def first(self, key: str) -> bool:
        """The Slack adapter's once-filter interface."""
        return self.first_delivery(key)

    def _prune(self) -> None:
        """Forget deliveries and rate events older than their windows, at most once a minute."""
        now = self.clock()
        if now - self._last_prune < 60.0:
            return
        self._last_prune = now
        with Session(self.engine) as session:
            session.execute(delete(Delivery).where(col(Delivery.created_at) < _now() - timedelta(seconds=self.delivery_ttl_s)))
            session.execute(delete(RateEvent).where(col(RateEvent.created_at) < _now() - timedelta(minutes=2)))
            session.commit()

    # -- rate limits -------------------------------------------------------------------
    def rate_wait_s(self, subject: str, per_minute: int) -> float:
        """0 if `subject` may ask now (and counts it), else the seconds until it may: a sliding
        one-minute window over rows, so every worker sees the same count."""
        if per_minute <= 0:
            return 0.0
        since = _now() - timedelta(seconds=60)
        with Session(self.engine) as session:
            recent = session.exec(select(RateEvent.created_at).where(RateEvent.subject == subject,
                                                                     col(RateEvent.created_at) >= since)
                                  .order_by(col(RateEvent.created_at))).all()
            if len(recent) >= per_minute:
                oldest = _aware(recent[0])
                return max(0.1, 60.0 - (_now() - oldest).total_seconds())
            session.add(RateEvent(subject=subject))
            session.commit()
        return 0.0

    # -- reply threads -------------------------------------------------------------------
    def remember_thread(self, key: str, thread: str) -> None:
        with Session(self.engine) as session:
            row = session.exec(select(ReplyThread).where(ReplyThread.key == key)).first()
            if row is None:
                row = ReplyThread(key=key, thread=thread)
            row.thread = thread
            session.add(row)
            try:
                session.commit()
            except IntegrityError:  # another worker stored it meanwhile; same message, same thread
                session.rollback()

    def thread_of(self, key: str) -> str | None:
        with Session(self.engine) as session:
            row = session.exec(select(ReplyThread).where(ReplyThread.key == key)).first()
            return row.thread if row else None

    # -- conversation leases ---------------------------------------------------------------
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
        while True:
            with Session(self.engine) as session:
                now = _now()
                session.execute(delete(ConversationLease).where(col(ConversationLease.key) == key,
                                                                col(ConversationLease.expires_at) < now))
                session.add(ConversationLease(key=key, holder=self.holder,
                                              expires_at=now + timedelta(seconds=self.lease_s)))
                try:
                    session.commit()
                    return True
                except IntegrityError:
                    session.rollback()
            if self.clock() >= deadline:
                return False
            time.sleep(pause)
            pause = min(pause * 1.5, 0.2)

    def _release(self, key: str) -> None:
        try:
            with Session(self.engine) as session:
                session.execute(delete(ConversationLease).where(col(ConversationLease.key) == key,
                                                                col(ConversationLease.holder) == self.holder))
                session.commit()
        except Exception as exc:  # the lease expires on its own; never fail a finished turn over it
            log.warning("could not release conversation lease %s: %s", key, str(exc).splitlines()[0][:200])

    def counts(self) -> dict[str, int]:
        """Rows per table (for doctor and tests)."""
        with Session(self.engine) as session:
            return {name: int(session.exec(select(func.count()).select_from(model)).one())
                    for name, model in (("deliveries", Delivery), ("rate_events", RateEvent),
                                        ("reply_threads", ReplyThread), ("leases", ConversationLease))}
