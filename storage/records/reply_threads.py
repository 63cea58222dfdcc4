"""The reply-thread map as rows of the transcript database (the `reply_thread` table, Alembic
revision 0003): which conversation thread a bot message belongs to, so a reply to it continues
that thread on any worker; on Slack, who was answered in which channel thread.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import Field, Session, SQLModel, col, select

from storage.records.database import utcnow


class ReplyThread(SQLModel, table=True):
    """The conversation thread a bot message belongs to, so a reply to it continues that thread;
    on Slack, the channel thread a person was answered in, so their next reply there does."""

    __tablename__ = "reply_thread"
    id: int | None = Field(default=None, primary_key=True)
    key: str = Field(unique=True, index=True)  # platform:chat:message (Slack: slack:channel:thread:user)
    thread: str
    created_at: datetime = Field(default_factory=utcnow)


class ReplyThreads:
    """Reply-thread rows over one engine."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def remember(self, key: str, thread: str) -> None:
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
