"""Turns handed to people, as rows of the transcript database (Alembic revision 0013).

When groundbot cannot answer, the asker may press "Ask a person": the scope's experts are tagged
in the thread and the turn gets one escalation row (one however often, and on whichever worker,
the button is pressed: the turn id is unique). The first answer an expert gives in that thread
is kept on the row and becomes an FAQ draft in the review queue, so the loop from a refusal to a
person's answer to the knowledge base is closed and counted (`counts`, the report)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Index
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import Field, Session, SQLModel, col, func, select, update

from storage.records.database import utcnow
from storage.records.tables import ReviewItem

OPEN, ANSWERED = "open", "answered"


class Escalation(SQLModel, table=True):
    """One turn handed to people: where it was asked, and the expert's answer once given."""

    __tablename__ = "escalation"
    __table_args__ = (Index("ix_escalation_thread", "platform", "chat_id", "thread_id"),)
    id: int | None = Field(default=None, primary_key=True)
    turn_id: int = Field(index=True, unique=True, foreign_key="turn.id")
    platform: str
    chat_id: str
    thread_id: str
    asker: str
    status: str = OPEN  # open | answered
    expert: str = ""  # the expert whose reply was taken
    answer: str = ""
    created_at: datetime = Field(default_factory=utcnow)
    answered_at: datetime | None = None


@dataclass(frozen=True)
class Opened:
    """An escalation row, and whether this call created it (False: pressed before)."""

    row: Escalation
    new: bool


class Escalations:
    """Escalation rows over one engine."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def open(self, turn_id: int, platform: str, chat_id: str, thread_id: str, asker: str) -> Opened:
        """The turn's escalation, created on the first call."""
        with Session(self.engine) as session:
            row = Escalation(turn_id=turn_id, platform=platform, chat_id=chat_id, thread_id=thread_id, asker=asker)
            session.add(row)
            try:
                session.commit()
                session.refresh(row)
                return Opened(row, True)
            except IntegrityError:  # pressed before, here or on another worker
                session.rollback()
        with Session(self.engine) as session:
            found = session.exec(select(Escalation).where(Escalation.turn_id == turn_id)).one()
            return Opened(found, False)

    def waiting(self, platform: str, chat_id: str, thread_id: str) -> Escalation | None:
        """The open escalation of a thread (the oldest, when several turns of it were escalated)."""
        with Session(self.engine) as session:
            return session.exec(select(Escalation).where(
                Escalation.platform == platform, Escalation.chat_id == chat_id, Escalation.thread_id == thread_id,
                Escalation.status == OPEN).order_by(col(Escalation.id))).first()

    def answer(self, escalation_id: int, expert: str, text: str) -> bool:
        """Take an expert's answer; True for the first one only (two workers, two experts)."""
        with Session(self.engine) as session:
            done = session.exec(update(Escalation).where(  # type: ignore[call-overload]
                col(Escalation.id) == escalation_id, col(Escalation.status) == OPEN)
                .values(status=ANSWERED, expert=expert, answer=text, answered_at=utcnow()))
            session.commit()
            return bool(done.rowcount)

    def counts(self, scope_turns: list[int] | None = None) -> dict[str, int]:
        """Questions escalated, answered by people, and turned into FAQ entries (their review
        items saved as FAQ)."""
        own = [] if scope_turns is None else [col(Escalation.turn_id).in_(scope_turns)]
        with Session(self.engine) as session:
            escalated = session.exec(select(func.count()).select_from(Escalation).where(*own)).one()
            answered = session.exec(select(func.count()).select_from(Escalation)
                                    .where(Escalation.status == ANSWERED, *own)).one()
            faq = session.exec(select(func.count()).select_from(ReviewItem).where(
                ReviewItem.origin == "expert", ReviewItem.status == "faq",
                *([] if scope_turns is None else [col(ReviewItem.turn_id).in_(scope_turns)]))).one()
        return {"escalated": int(escalated), "answered_by_people": int(answered), "turned_into_faq": int(faq)}
