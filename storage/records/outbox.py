"""The outbox of reviewed decisions: a decision is written here before anyone tries to send it,
so an answer an admin approved is not lost when the approving process has no connection to the
user's platform (a console admin approving a Telegram question, one worker of several) or the
send fails. Rows go pending -> sent; each try is counted and its error kept.

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

from sqlalchemy import update
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, func, select

from core.messages import ConversationKey
from storage.records.tables import OutboxRow

PENDING, SENT = "pending", "sent"


@dataclass(frozen=True)
class Parcel:
    """One pending decision a worker has claimed: where it goes and what it says."""

    id: int
    item_id: int
    key: ConversationKey
    decision: dict[str, Any]
    attempts: int


class Outbox:
    """Pending reviewed decisions in the transcript database, claimed one worker at a time."""

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
                return self._row_id(item_id)
            assert row.id is not None
            return row.id

    def _row_id(self, item_id: int) -> int:
        with Session(self.engine) as session:
            found = session.exec(select(OutboxRow.id).where(OutboxRow.item_id == item_id)).one()
            return int(found or 0)

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
            assert row is not None and row.id is not None
            return Parcel(row.id, row.item_id, ConversationKey(row.platform, row.chat_id, row.thread_id),
                          dict(row.decision), row.attempts)

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

    def pending_count(self) -> int:
        with Session(self.engine) as session:
            return int(session.exec(select(func.count()).select_from(OutboxRow)
                                    .where(col(OutboxRow.status) == PENDING)).one())
