"""State several `groundbot serve` workers must agree on, kept as rows in the transcript database.

A worker's memory is lost when it restarts and is invisible to its siblings, so anything that
decides whether or how a message is answered lives here instead: platform deliveries (a unique
key, so a Slack retry or a re-delivered Telegram update reaching any worker is answered once),
per-user rate-limit events, the reply-thread map (which conversation a bot message belongs to;
on Slack, who was answered in which channel thread) and conversation leases (one turn of a
conversation at a time, whichever worker holds it).
Tables are created by Alembic revision 0003; delivery claims by 0007.

A delivery is *claimed* (holder, claimed_at, the platform payload) before the platform is
acknowledged, and *done* only once its reply was sent and its turn recorded. The holder's
heartbeat renews its claims; a claim not renewed for `stale_s` belonged to a worker that died,
and the next worker to see it (a platform retry, or `abandoned()` sweeping) takes it over and
answers from the stored payload. Without that, an acknowledged message died with its worker.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any

from sqlalchemy import JSON, delete, update
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.engine import CursorResult, Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import Field, Session, SQLModel, col, func, select

from storage.records.database import make_engine

log = logging.getLogger(__name__)


def _now() -> datetime:
    return datetime.now(UTC)


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
    created_at: datetime = Field(default_factory=_now, index=True)
    state: str = Field(default=DONE, index=True)  # claimed | done | failed
    holder: str = ""  # the worker that claimed it last
    claimed_at: datetime | None = None  # renewed by the holder's heartbeat while it lives
    attempts: int = 1  # workers that claimed it (a delivery that kills every worker is given up)
    payload: dict[str, Any] | None = Field(default=None, sa_type=PAYLOAD_TYPE)  # the update / event body


class RateEvent(SQLModel, table=True):
    """One question counted against a user's per-minute limit."""

    __tablename__ = "rate_event"
    id: int | None = Field(default=None, primary_key=True)
    subject: str = Field(index=True)
    created_at: datetime = Field(default_factory=_now, index=True)


class ReplyThread(SQLModel, table=True):
    """The conversation thread a bot message belongs to, so a reply to it continues that thread;
    on Slack, the channel thread a person was answered in, so their next reply there does."""

    __tablename__ = "reply_thread"
    id: int | None = Field(default=None, primary_key=True)
    key: str = Field(unique=True, index=True)  # platform:chat:message (Slack: slack:channel:thread:user)
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
                 stale_s: float = 15.0, max_attempts: int = 3, clock: Callable[[], float] = time.monotonic,
                 events_keep_s: float = 120.0) -> None:
        """`events_keep_s`: how long rate-limit and failure events are kept (the longest window)."""
        self.engine = engine
        self.events_keep_s = max(120.0, events_keep_s)
        self.lease_s = lease_s
        self.delivery_ttl_s = delivery_ttl_s
        self.stale_s = stale_s
        self.max_attempts = max_attempts
        self.clock = clock
        self.holder = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._last_prune = 0.0
        self._beating = threading.Event()

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

    def claim(self, key: str, payload: dict[str, Any] | None = None) -> Claim:
        """Offer a delivery before acknowledging it: NEW or TAKEN means this worker must answer
        it and call `done(key)` after; BUSY and DONE mean acknowledge it and do nothing."""
        self._prune()
        with Session(self.engine) as session:
            session.add(Delivery(key=key, state=CLAIMED, holder=self.holder, claimed_at=_now(), payload=payload))
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
                       col(Delivery.claimed_at) < _now() - timedelta(seconds=self.stale_s),
                       col(Delivery.attempts) < self.max_attempts)
                .values(holder=self.holder, claimed_at=_now(), attempts=col(Delivery.attempts) + 1))
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
        before = _now() - timedelta(seconds=self.stale_s + margin_s)
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

    # -- heartbeat ---------------------------------------------------------------------
    def renew(self, engine: Engine | None = None) -> None:
        """Renew this worker's delivery claims and conversation leases (it is alive)."""
        now = _now()
        with Session(engine or self.engine) as session:
            session.execute(update(Delivery).where(col(Delivery.holder) == self.holder, col(Delivery.state) == CLAIMED)
                            .values(claimed_at=now))
            session.execute(update(ConversationLease).where(col(ConversationLease.holder) == self.holder)
                            .values(expires_at=now + timedelta(seconds=self.lease_s)))
            session.commit()

    def start_heartbeat(self, every_s: float | None = None) -> None:
        """Renew on a daemon thread every `every_s` (default: a fifth of `stale_s`)."""
        if self._beating.is_set():
            return
        self._beating.set()
        interval = every_s or max(0.2, self.stale_s / 5)
        # its own connection: turns holding every pooled one must not make a live worker look dead
        own = make_engine(self.engine.url.render_as_string(hide_password=False))

        def beat() -> None:
            while self._beating.is_set():
                time.sleep(interval)
                try:
                    self.renew(own)
                except Exception as exc:  # the database is away: claims go stale, others take them
                    log.warning("heartbeat failed: %s", str(exc).splitlines()[0][:200])
            own.dispose()

        threading.Thread(target=beat, name="groundbot-heartbeat", daemon=True).start()

    def stop_heartbeat(self) -> None:
        self._beating.clear()

    def _prune(self) -> None:
        """Forget deliveries and rate events older than their windows, at most once a minute."""
        now = self.clock()
        if now - self._last_prune < 60.0:
            return
        self._last_prune = now
        with Session(self.engine) as session:
            session.execute(delete(Delivery).where(col(Delivery.created_at) < _now() - timedelta(seconds=self.delivery_ttl_s)))
            session.execute(delete(RateEvent).where(col(RateEvent.created_at)
                                                    < _now() - timedelta(seconds=self.events_keep_s)))
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

    # -- locks after repeated failures (wrong credentials) ------------------------------------
    def locked_s(self, keys: Sequence[str], window_s: float) -> float:
        """Seconds left of the newest lock on any of `keys` (a lock lasts `window_s` from when
        `fail` took it); 0 when none holds. One query, whichever worker took the lock."""
        since = _now() - timedelta(seconds=window_s)
        with Session(self.engine) as session:
            newest = session.exec(select(func.max(RateEvent.created_at)).where(
                col(RateEvent.subject).in_([f"lock:{k}" for k in keys]), col(RateEvent.created_at) >= since)).first()
        if newest is None:
            return 0.0
        return max(0.1, window_s - (_now() - _aware(newest)).total_seconds())

    def fail(self, limits: Mapping[str, int], window_s: float) -> list[str]:
        """Count one failure against each key of `limits`; the keys whose failures within
        `window_s` reached their limit now (a limit of 0 never does), each locked from now for
        `window_s`. The caller asks `locked_s` first and counts nothing while locked, so after a
        lock a key's count starts again from none."""
        self._prune()
        since = _now() - timedelta(seconds=window_s)
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

    def replied_after_turn(self, turn_uid: str, thread_prefix: str) -> bool:
        """Whether turn `turn_uid` is recorded and a bot message was sent in its chat since (a
        reply-thread row under `thread_prefix`, which the adapter writes right after each send):
        a worker killed between sending a reply and marking its delivery done leaves both."""
        from storage.records.tables import TurnRecord

        with Session(self.engine) as session:
            recorded = session.exec(select(TurnRecord.created_at).where(TurnRecord.uid == turn_uid)).first()
            if recorded is None:
                return False
            sent = session.exec(select(ReplyThread.id).where(col(ReplyThread.key).startswith(thread_prefix),
                                                             col(ReplyThread.created_at) >= recorded)).first()
        return sent is not None

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
        while not self.try_lease(key):
            if self.clock() >= deadline:
                return False
            time.sleep(pause)
            pause = min(pause * 1.5, 0.2)
        return True

    def try_lease(self, key: str) -> bool:
        """Take `key`'s lease for `lease_s` if nobody holds it (or its holder let it expire)."""
        with Session(self.engine) as session:
            now = _now()
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
                            .values(expires_at=_now() + timedelta(seconds=self.lease_s)))
            session.commit()

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

    def claims(self) -> dict[str, int]:
        """Deliveries by state (for tests and the load benchmark)."""
        with Session(self.engine) as session:
            rows = session.exec(select(Delivery.state, func.count()).group_by(col(Delivery.state))).all()
        return {str(state): int(n) for state, n in rows}

    def counts(self) -> dict[str, int]:
        """Rows per table (for doctor and tests)."""
        with Session(self.engine) as session:
            return {name: int(session.exec(select(func.count()).select_from(model)).one())
                    for name, model in (("deliveries", Delivery), ("rate_events", RateEvent),
                                        ("reply_threads", ReplyThread), ("leases", ConversationLease))}


def _rows(result: Any) -> int:
    """Rows an UPDATE matched."""
    return int(result.rowcount) if isinstance(result, CursorResult) else 0
