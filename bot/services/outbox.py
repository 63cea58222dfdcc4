"""The courier: sends the outbox's rows (storage/records/outbox.py) through the platforms this
process is connected to, and retries what failed until it is sent: reviewed decisions to their
users, and new review items' cards to the admins of each platform.

A row is queued before the first try, so nothing an admin decided is lost: when the
approving process has no connection to the user's platform (a console admin deciding a
Telegram question) or the send fails, any groundbot process with that platform sends it
later; every process that registers a delivery runs a small retry thread. A held turn's
announcement is queued with its review item and sent by that thread after the turn (`wake`
asks for a round at once), so the admins' platform never holds up the user's answer.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import uuid
from collections.abc import Callable

from core.admin_replies import Reply
from core.messages import Decision, Platform
from core.ports import Delivery
from storage.records.outbox import ANNOUNCEMENT, Outbox, Parcel

log = logging.getLogger(__name__)
# the platforms with a Delivery (adapters that can write to a user first); a question asked
# through `groundbot ask`, POST /api/ask or an MCP tool has no one to send the answer to later
PUSHED = frozenset({Platform.CONSOLE, Platform.TELEGRAM, Platform.SLACK})
# (review item id, platform) -> the card and the scope admins' user ids to tell there, or None
# when there is nothing to announce any more (the item was decided, or is gone)
Cards = Callable[[int, str], tuple[Reply, list[str]] | None]


class Courier:
    """Tries the outbox rows of the platforms this process is connected to (`connect`); an
    announcement's card comes from `cards` (ReviewCards.announcement, bot/services/review.py).
    `cards` has no default: without it every announcement would be dropped as decided."""

    def __init__(self, outbox: Outbox, interval_s: float = 5.0, *, cards: Cards) -> None:
        self.outbox = outbox
        self.interval_s = interval_s
        self.cards = cards
        self.worker = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        # how each platform this process is connected to is sent to: one entry per running adapter
        self._deliveries: dict[str, Delivery] = {}

    def connect(self, platform: str, delivery: Delivery) -> None:
        """A platform this process can send to (its adapter is running): its rows are sent, and
        retried, from now on, by this courier's retry thread (started here)."""
        self._deliveries[platform] = delivery  # one assignment: a flush under way reads the old or the new
        self.start()

    def delivery(self, platform: str) -> Delivery | None:
        """How this process sends to `platform`; None: it is not connected to it."""
        return self._deliveries.get(platform)

    def attempt(self, row_id: int) -> str | None:
        """Try one row now: None if sent, else why not ("" when another worker has it or it is
        not due). A failure is recorded on the row and retried after a back-off; an announcement
        of an item decided meanwhile is dropped, unsent."""
        parcel = self.outbox.claim(row_id, self.worker)
        if parcel is None:
            return ""
        delivery = self.delivery(parcel.key.platform)
        try:
            if delivery is None:
                raise LookupError(f"no {parcel.key.platform} connection in this process")
            if parcel.kind == ANNOUNCEMENT:
                dropped = self._announce(parcel, delivery)
                if dropped:
                    return dropped
            else:
                delivery.deliver(parcel.key, Decision.from_dict(parcel.decision))
        except Exception as exc:  # recorded on the row; the retry thread tries again
            why = f"{type(exc).__name__}: {str(exc)[:200]}"
            log.warning("outbox row %s (review item %s): try %s failed: %s", row_id, parcel.item_id,
                        parcel.attempts, why)
            self.outbox.failed(row_id, self.worker, why, parcel.attempts)
            return why
        if not self.outbox.sent(row_id, self.worker):
            log.warning("outbox row %s: sent, but its lease had run out (it may be sent again)", row_id)
        return None

    def _announce(self, parcel: Parcel, delivery: Delivery) -> str:
        """Post the item's card to the platform's admins; why not (the row dropped for good)
        when there is nothing to announce any more, else ""."""
        found = self.cards(parcel.item_id, parcel.key.platform)
        if found is None:
            why = "the review item was decided before its card was sent"
            self.outbox.dropped(parcel.id, self.worker, why)
            return why
        card, users = found
        delivery.notify(card, users)
        return ""

    def flush(self) -> int:
        """Try every due row this process can send; returns how many were sent."""
        with self._lock:  # one flush at a time per process; other processes are kept out by the lease
            rows = self.outbox.due(sorted(self._deliveries))
            return sum(1 for row_id in rows if self.attempt(row_id) is None)

    def start(self) -> None:
        """Run `flush` every `interval_s` seconds in a daemon thread (once per courier)."""
        self._stop.clear()  # a thread still winding down after stop() carries on
        if self.interval_s <= 0 or (self._thread is not None and self._thread.is_alive()):
            return
        self._thread = threading.Thread(target=self._loop, name="groundbot-outbox", daemon=True)
        self._thread.start()

    def wake(self) -> None:
        """Ask the retry thread for a round now (a new row is due); without one, a process
        connected to the row's platform sends it."""
        self._wake.set()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()

    def _loop(self) -> None:
        while True:
            self._wake.wait(self.interval_s)
            self._wake.clear()
            if self._stop.is_set():
                return
            try:
                self.flush()
            except Exception as exc:  # a database outage: try again next round
                log.warning("outbox: flush failed: %s", exc)
