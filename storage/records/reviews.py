"""The review queue's rows: what waits, what one item holds, and a decision taken once.

Items are made where the turn or the complaint is recorded (storage/records/transcripts.py); here
admins' commands read them and decide them. A decision is one conditional UPDATE (status
still "open"), so of two admins (or two workers) deciding the same item exactly one wins.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import update
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

from storage.records.transcripts import ReviewItem, SuggestionRow, TurnRecord

OPEN = "open"
EXPERT = "expert"  # the origin of an FAQ draft from an expert's answer (storage/records/escalations.py)


@dataclass
class QueueEntry:
    """A review item with the turn it is about (the decision record, where to answer)."""

    id: int
    turn_id: int
    origin: str
    reason: str
    comment: str
    status: str
    reviewer: str
    final_answer: str
    created_at: datetime
    decided_at: datetime | None
    platform: str
    chat_id: str
    thread_id: str
    user_id: str
    record: dict[str, Any] = field(default_factory=dict)

    @property
    def question(self) -> str:
        return str(self.record.get("question", ""))

    @property
    def draft(self) -> str:
        """What would be said: the held draft, the answer a user complained about, or an expert's
        answer to a refused question (kept as the item's comment)."""
        if self.origin == EXPERT:
            return self.comment
        return str(self.record.get("draft") or self.record.get("answer") or "")


def _entry(item: ReviewItem, turn: TurnRecord) -> QueueEntry:
    if item.id is None or turn.id is None:
        raise ValueError("a review item and its turn are read from the database, with their ids")
    return QueueEntry(item.id, turn.id, item.origin, item.reason, item.comment, item.status, item.reviewer,
                      item.final_answer, item.created_at, item.decided_at, turn.platform, turn.chat_id,
                      turn.thread_id, turn.user_id, dict(turn.record) | {"turn_id": turn.id})


class ReviewQueue:
    """Reads and decides review items in the transcript database."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def entries(self, status: str = OPEN, limit: int = 20, scopes: list[str] | None = None) -> list[QueueEntry]:
        """Items in `status` ("" = all), oldest first; with `scopes`, only questions asked in them
        (what a scope's own admins review)."""
        with Session(self.engine) as session:
            query = select(ReviewItem, TurnRecord).where(ReviewItem.turn_id == TurnRecord.id)
            if status:
                query = query.where(ReviewItem.status == status)
            if scopes is not None:
                query = query.where(col(TurnRecord.scope).in_(scopes))
            rows = session.exec(query.order_by(ReviewItem.id).limit(limit)).all()  # type: ignore[arg-type]
            return [_entry(item, turn) for item, turn in rows]

    def entry(self, item_id: int) -> QueueEntry | None:
        with Session(self.engine) as session:
            item = session.get(ReviewItem, item_id)
            turn = session.get(TurnRecord, item.turn_id) if item else None
            return _entry(item, turn) if item and turn else None

    def entry_for_turn(self, turn_id: int) -> QueueEntry | None:
        with Session(self.engine) as session:
            item = session.exec(select(ReviewItem).where(ReviewItem.turn_id == turn_id)).first()
            turn = session.get(TurnRecord, turn_id) if item else None
            return _entry(item, turn) if item and turn else None

    def decide(self, item_id: int, status: str, reviewer: str, final_answer: str = "") -> bool:
        """Record the decision if the item is still open; False if someone decided it first."""
        with Session(self.engine) as session:
            result = session.exec(  # type: ignore[call-overload]
                update(ReviewItem).where(ReviewItem.id == item_id, ReviewItem.status == OPEN)  # type: ignore[arg-type]
                .values(status=status, reviewer=reviewer, final_answer=final_answer, decided_at=datetime.now(UTC)))
            session.commit()
            return bool(result.rowcount == 1)

    def add_expert_answer(self, turn_id: int, expert: str, answer: str) -> int | None:
        """The turn's review item as an FAQ draft of an expert's answer: a new item, or the open one
        the turn already has (a user flagged the refusal) made one; None when its item was decided."""
        with Session(self.engine) as session:
            item = session.exec(select(ReviewItem).where(ReviewItem.turn_id == turn_id)).first()
            if item is None:
                item = ReviewItem(turn_id=turn_id, origin=EXPERT, reason=expert, comment=answer)
            elif item.status == OPEN:
                item.origin, item.reason, item.comment = EXPERT, expert, answer
            else:
                return None
            session.add(item)
            try:
                session.commit()
            except IntegrityError:  # another worker added the turn's item meanwhile
                session.rollback()
                return None
            session.refresh(item)
            return item.id

    def add_suggestions(self, turn_id: int, texts: list[str]) -> list[tuple[int, str]]:
        """Suggestion rows for a turn answered later (a rejection), so buttons carry their ids."""
        with Session(self.engine) as session:
            rows = [SuggestionRow(turn_id=turn_id, text=t) for t in texts]
            session.add_all(rows)
            session.commit()
            return [(r.id or 0, r.text) for r in rows]
