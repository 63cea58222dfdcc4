"""State several `groundbot serve` workers must agree on, kept as rows in the transcript database.

A worker's memory is lost when it restarts and is invisible to its siblings, so anything that
decides whether or how a message is answered lives in rows instead, one module per job:
platform deliveries and their claims (storage/records/deliveries.py), per-user rate limits and
wrong-credential counts (rate_events.py), the reply-thread map (reply_threads.py) and
conversation leases (leases.py). Tables are created by Alembic revision 0003; delivery claims by 0007.

`SharedState` builds the four over one engine under one worker id, and runs the heartbeat that
renews this worker's delivery claims and leases: a worker that stops renewing them has died,
and the others take its claims over (storage/records/deliveries.py) and its leases expire.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime

from sqlalchemy.engine import Engine
from sqlmodel import Session, func, select

from storage.records.database import make_engine, worker_id
from storage.records.deliveries import Deliveries, Delivery
from storage.records.leases import ConversationLease, ConversationLeases
from storage.records.rate_events import RateEvent, RateEvents
from storage.records.reply_threads import ReplyThread, ReplyThreads

log = logging.getLogger(__name__)


class SharedState:
    """One worker's deliveries, rate events, reply threads and conversation leases over one
    engine, and the heartbeat that keeps its claims and leases alive."""

    def __init__(self, engine: Engine, *, lease_s: float = 60.0, delivery_ttl_s: float = 7 * 86400.0,
                 stale_s: float = 15.0, max_attempts: int = 3, clock: Callable[[], float] = time.monotonic,
                 events_keep_s: float = 120.0) -> None:
        """`events_keep_s`: how long rate-limit and failure events are kept (the longest window)."""
        self.engine = engine
        self.holder = worker_id()
        self.deliveries = Deliveries(engine, self.holder, delivery_ttl_s=delivery_ttl_s, stale_s=stale_s,
                                     max_attempts=max_attempts, clock=clock)
        self.rates = RateEvents(engine, events_keep_s=events_keep_s, clock=clock)
        self.threads = ReplyThreads(engine)
        self.leases = ConversationLeases(engine, self.holder, lease_s=lease_s, clock=clock)
        self._beating = threading.Event()

    # -- heartbeat ---------------------------------------------------------------------
    def renew(self, engine: Engine | None = None) -> None:
        """Renew this worker's delivery claims and conversation leases (it is alive)."""
        now = datetime.now(UTC)
        with Session(engine or self.engine) as session:
            session.execute(self.deliveries.renewal(now))
            session.execute(self.leases.renewal(now))
            session.commit()

    def start_heartbeat(self, every_s: float | None = None) -> None:
        """Renew on a daemon thread every `every_s` (default: a fifth of the deliveries' `stale_s`)."""
        if self._beating.is_set():
            return
        self._beating.set()
        interval = every_s or max(0.2, self.deliveries.stale_s / 5)
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

    def counts(self) -> dict[str, int]:
        """Rows per table (for doctor and tests)."""
        with Session(self.engine) as session:
            return {name: int(session.exec(select(func.count()).select_from(model)).one())
                    for name, model in (("deliveries", Delivery), ("rate_events", RateEvent),
                                        ("reply_threads", ReplyThread), ("leases", ConversationLease))}
