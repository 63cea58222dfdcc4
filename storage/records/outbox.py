"""The outbox: what groundbot owes a platform outside a turn, written here before anyone tries
to send it. Rows are of two kinds:

- a reviewed decision for the user who asked (one per review item): an answer an admin approved
  is not lost when the approving process has no connection to the user's platform (a console
  admin approving a Telegram question, one worker of several) or the send fails;
- an announcement of a new review item to the admins of one platform (one per item and
  platform): queued with the item, posted after the turn by a process running that platform,
  so a slow or unreachable admin platform neither delays the user's answer nor loses the card.

Rows go pending -> sent (or dropped: an announcement whose item was decided before it went out);
each try is counted and its error kept.

Exactly one worker tries a row at a time: a try starts with a conditional UPDATE that takes a
lease (`due_at` moves `lease_s` into the future, `claimed_by` names the worker) only if the row
is still pending and due; a failure hands it back with a back-off. A row is sent twice only if
a worker dies after the platform accepted the message and before it recorded "sent" (or a send
outlasts the lease): then it is sent again once the lease runs out (at least once, not lost).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, insert, update
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, func, select

from core.messages import ConversationKey
from storage.records.tables import OutboxRow

PENDING, SENT, DROPPED = "pending", "sent", "dropped"
DECISION, ANNOUNCEMENT = "decision", "announcement"  # a row's kind
_NEW_ROWS = insert(OutboxRow.__table__)  # type: ignore[attr-defined]  # built once, as the turn's statements are


@dataclass(frozen=True)
class Parcel:
    """One pending row a worker has claimed: a decision (where it goes and what it says) or an
    announcement (the item, and the platform in `key`; its card is read when it is sent)."""

    id: int
    item_id: int
    key: ConversationKey
    decision: dict[str, Any]
    attempts: int
    kind: str = DECISION


def announcement_rows(item_id: int, platforms: list[str]) -> list[dict[str, Any]]:
    """The rows announcing review item `item_id` to the admins of each of `platforms` (each once)."""
    now = time.time()
    return [{"item_id": item_id, "kind": ANNOUNCEMENT, "platform": p, "chat_id": "", "thread_id": "", "decision": {},
             "status": PENDING, "attempts": 0, "last_error": "", "due_at": now, "claimed_by": "",
             "created_at": datetime.now(UTC)} for p in dict.fromkeys(platforms)]


def queue_announcements(conn: Connection, item_id: int, platforms: list[str]) -> None:
    """Queue the announcements of a review item created in `conn`'s transaction (so an item is
    never without them, nor they without it)."""
    rows = announcement_rows(item_id, platforms)
    if rows:
        conn.execute(_NEW_ROWS, rows)


class Outbox:
    """Pending decisions and announcements in the transcript database, claimed one worker at a time."""

    def __init__(self, engine: Engine, *, lease_s: float = 120.0, backoff_s: float = 5.0,
                 max_backoff_s: float = 600.0) -> None:
        self.engine = engine
        self.lease_s = lease_s
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s

    def add(self, item_id: int, key: ConversationKey, decision: dict[str, Any]) -> int:
        """Queue the decision of review item `item_id` (once: a second add returns the first row)."""
        with Session(self.engine) as session:
            row = OutboxRow(item_id=item_id, platform=key.platform, chat_id=key.chat_id, thread_id=key.thread_id,
                            decision=decision, due_at=time.time())
            session.add(row)
            try:
                session.commit()
            except IntegrityError:
                session.rollback()
                return self._row_id(item_id, DECISION)
            return _id_of(row)

    def announce(self, item_id: int, platforms: list[str]) -> list[int]:
        """Queue the announcement of review item `item_id` to each platform's admins (once per
        item and platform: a platform announced already keeps its first row); the rows' ids."""
        ids = []
        for values in announcement_rows(item_id, platforms):
            with Session(self.engine) as session:
                row = OutboxRow(**values)
                session.add(row)
                try:
                    session.commit()
                except IntegrityError:
                    session.rollback()
                    ids.append(self._row_id(item_id, ANNOUNCEMENT, values["platform"]))
                    continue
                ids.append(_id_of(row))
        return ids

    def _row_id(self, item_id: int, kind: str, platform: str | None = None) -> int:
        with Session(self.engine) as session:
            query = select(OutboxRow.id).where(OutboxRow.item_id == item_id, OutboxRow.kind == kind)
            if platform is not None:
                query = query.where(OutboxRow.platform == platform)
            return int(session.exec(query).one() or 0)

    def claim(self, row_id: int, worker: str) -> Parcel | None:
        """Take the lease on a pending, due row; None if it is sent, not due, or another worker has it."""
        now = time.time()
        with Session(self.engine) as session:
            result = session.exec(  # type: ignore[call-overload]
                update(OutboxRow).where(col(OutboxRow.id) == row_id, col(OutboxRow.status) == PENDING,
                                        col(OutboxRow.due_at) <= now)
                .values(due_at=now + self.lease_s, claimed_by=worker, attempts=OutboxRow.attempts + 1))
            session.commit()
            if result.rowcount != 1:
                return None
            row = session.get(OutboxRow, row_id)
            if row is None:
                raise RuntimeError(f"outbox row {row_id} vanished while claimed")
            return Parcel(_id_of(row), row.item_id, ConversationKey(row.platform, row.chat_id, row.thread_id),
                          dict(row.decision), row.attempts, row.kind)

    def due(self, platforms: list[str], limit: int = 20) -> list[int]:
        """Ids of pending rows for `platforms` whose time has come, oldest first."""
        if not platforms:
            return []
        with Session(self.engine) as session:
            query = (select(OutboxRow.id).where(col(OutboxRow.status) == PENDING, col(OutboxRow.due_at) <= time.time(),
                                                col(OutboxRow.platform).in_(platforms))
                     .order_by(col(OutboxRow.id)).limit(limit))
            return [int(i) for i in session.exec(query).all() if i is not None]

    def sent(self, row_id: int, worker: str) -> bool:
        """Record the send (the last error stays, for the record); False if the lease was lost
        meanwhile (another worker took the row)."""
        return self._settle(row_id, worker, status=SENT, sent_at=datetime.now(UTC), claimed_by="")

    def dropped(self, row_id: int, worker: str, why: str) -> bool:
        """Settle the row unsent, for good (an announcement of an item decided meanwhile)."""
        return self._settle(row_id, worker, status=DROPPED, last_error=why[:500], claimed_by="")

    def failed(self, row_id: int, worker: str, error: str, attempts: int) -> bool:
        """Hand the row back with its error; it is due again after a back-off that doubles per try."""
        wait = min(self.max_backoff_s, self.backoff_s * 2 ** max(0, attempts - 1))
        return self._settle(row_id, worker, last_error=error[:500], due_at=time.time() + wait, claimed_by="")

    def _settle(self, row_id: int, worker: str, **values: Any) -> bool:
        with Session(self.engine) as session:
            result = session.exec(  # type: ignore[call-overload]
                update(OutboxRow).where(col(OutboxRow.id) == row_id, col(OutboxRow.status) == PENDING,
                                        col(OutboxRow.claimed_by) == worker).values(**values))
            session.commit()
            return bool(result.rowcount == 1)

    def row(self, row_id: int) -> OutboxRow | None:
        with Session(self.engine) as session:
            return session.get(OutboxRow, row_id)

    def rows_of(self, item_id: int) -> list[OutboxRow]:
        """Every row of review item `item_id`, oldest first."""
        with Session(self.engine) as session:
            return list(session.exec(select(OutboxRow).where(OutboxRow.item_id == item_id).order_by(col(OutboxRow.id))))

    def pending_count(self, kind: str = DECISION) -> int:
        """Pending rows of `kind` (by default the reviewed answers not sent yet)."""
        with Session(self.engine) as session:
            return int(session.exec(select(func.count()).select_from(OutboxRow)
                                    .where(col(OutboxRow.status) == PENDING, col(OutboxRow.kind) == kind)).one())


def _id_of(row: OutboxRow) -> int:
    """The id of a row the database has written (committed or read back)."""
    if row.id is None:
        raise RuntimeError("an outbox row has no id after its commit")
    return row.id
