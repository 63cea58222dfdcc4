"""The TranscriptStore port over SQLModel: conversations (with persisted state), turns,
suggestions, feedback, statistics, and the spool for turns the database cannot take.

The tables are in storage/records/tables.py, engines and migrations in storage/records/database.py (SQLite
in WAL mode with BEGIN IMMEDIATE, or PostgreSQL, named by `database_url`).
"""

from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from enum import StrEnum
from typing import Any, TypeVar

from sqlalchemy import Connection, CursorResult, bindparam, insert, update
from sqlalchemy import select as sa_select
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, SQLModel, col, func, select
from tenacity import Retrying, retry_if_exception, stop_after_delay, wait_exponential

from core.messages import ConversationKey, Decision, PriorTurn, Suggestion, section_label
from core.ports import ConversationState, ConversationTurn
from storage.records.database import MIGRATIONS, make_engine, migrate, transient, utcnow
from storage.records.outbox import queue_announcements
from storage.records.spool import ReplayResult, SpoolError, TurnSpool
from storage.records.tables import Conversation, Feedback, ReviewItem, SuggestionRow, TurnRecord, turn_values

# the tables and engine helpers keep their old import path (storage/records/reviews.py, migrations, tests)
__all__ = ["MIGRATIONS", "Conversation", "Feedback", "ReviewItem", "SqlTranscriptStore", "SuggestionRow",
           "TurnRecord", "make_engine", "migrate"]

log = logging.getLogger(__name__)
T = TypeVar("T")
# a turn's reads and writes are SQL statements on these tables, not ORM objects: the ORM's unit of
# work (instances, flushes, attributes expired and reloaded after commit) cost more than the SQL
_CONV, _TURN, _SUGG, _REVIEW = (SQLModel.metadata.tables[m.__tablename__] for m in  # type: ignore[index]
                                 (Conversation, TurnRecord, SuggestionRow, ReviewItem))


# built once: SQLAlchemy then finds each statement's compiled form by a key memoised on the object
_CONV_LOCK = sa_select(_CONV.c.id).where(_CONV.c.key == bindparam("key")).with_for_update()
_CONV_NEW = insert(_CONV)
_CONV_STATE = sa_select(_CONV.c.id, _CONV.c.state).where(_CONV.c.key == bindparam("key"))
_CONV_SET_STATE = update(_CONV).where(_CONV.c.id == bindparam("conv_id")).values(
    state=bindparam("new_state"), updated_at=bindparam("now"))
_HISTORY = (sa_select(_TURN.c.question, _TURN.c.answer, _TURN.c.scope, _TURN.c.sources, _TURN.c.record).where(_TURN.c.conversation_id == bindparam("conv_id"))
            .order_by(_TURN.c.id.desc()).limit(bindparam("n")))
_TURN_BY_UID = sa_select(_TURN.c.id).where(_TURN.c.uid == bindparam("uid"))
_TURN_NEW = insert(_TURN)
_TURN_SET_RECORD = update(_TURN).where(_TURN.c.id == bindparam("turn_id")).values(record=bindparam("turn_record"))
_SUGG_OF_TURN = sa_select(_SUGG.c.id, _SUGG.c.text).where(_SUGG.c.turn_id == bindparam("turn_id")).order_by(_SUGG.c.id)
_SUGG_NEW = insert(_SUGG)
_REVIEW_NEW = insert(_REVIEW)


def _new_id(result: CursorResult[Any]) -> int:
    """The primary key an INSERT gave its row."""
    key = result.inserted_primary_key
    if key is None:
        raise RuntimeError("the INSERT returned no primary key")
    return int(key[0])


def _percentile(session: Session, total: int, q: float, scope: str | None = None) -> float:
    """The q-th percentile of turn latency (of one knowledge scope's turns), interpolated between
    the two rows around it, read as those rows (ORDER BY ... OFFSET) rather than by loading every turn."""
    if not total:
        return 0.0
    pos = (total - 1) * q
    lo = int(pos)
    query = select(TurnRecord.latency_total_ms)
    if scope is not None:
        query = query.where(TurnRecord.scope == scope)
    rows = [float(x) for x in session.exec(query.order_by(col(TurnRecord.latency_total_ms)).offset(lo).limit(2)).all()]
    return rows[0] + ((rows[1] if len(rows) > 1 else rows[0]) - rows[0]) * (pos - lo)


def _prior(question: str, answer: str | None, scope: str | None, sources: Any, record: Any) -> PriorTurn:
    """An earlier turn as the next one reads it: the first cited source's section and the
    question it was understood as come from the turn's own record."""
    first = sources[0] if isinstance(sources, list) and sources and isinstance(sources[0], dict) else {}
    section = section_label(str(first.get("title") or ""), str(first.get("heading") or ""))
    resolved = record.get("resolved_question", "") if isinstance(record, dict) else ""
    return PriorTurn(question, answer or "", resolved=str(resolved or ""), scope=scope or "", section=section)


class Vote(StrEnum):
    """What storing a vote did; falsy when there was no such turn."""

    NONE = ""          # no such turn: nothing stored
    NEW = "new"        # the user's first vote on the turn
    CHANGED = "changed"  # up became down or down became up
    SAME = "same"      # the same vote again (a thumbs-down's reason or comment added)


class SqlTranscriptStore:
    """TranscriptStore port over SQLModel (SQLite or PostgreSQL), with a local spool.

    A busy database is retried for up to `lock_budget_s` per operation (here, not in core);
    a turn the database still cannot take goes to the spool and is replayed before the next
    turn that reaches the database, at start-up, and by `groundbot doctor --replay`.
    """

    def __init__(self, url: str, *, spool: TurnSpool | None = None, lock_budget_s: float = 10.0,
                 announce_to: Callable[[str | None], Sequence[str]] = lambda scope: ()) -> None:
        self.url = url
        self.spool = spool
        self.lock_budget_s = lock_budget_s
        self.engine = make_engine(url, lock_budget_s)
        # reads never take the write lock, so a long write elsewhere does not cost history (WAL)
        self.read_engine = make_engine(url, lock_budget_s, immediate=False) if url.startswith("sqlite") else self.engine
        self._schema_ready = False
        self.replayed_total = 0  # spooled turns this process moved into the database
        # (scope) -> the platforms whose admins are told of a held turn asked in it: its
        # announcements join the outbox with the review item (build_app passes the config's);
        # given here, so a turn replayed from the spool at start-up is announced too
        self.announce_to = announce_to
        try:
            self._ensure_schema()
        except Exception as exc:  # a locked, read-only or unreachable database must not stop the bot
            log.warning("transcript database not ready (%s); turns go to the spool until it is",
                        str(exc).splitlines()[0][:200])

    def _ensure_schema(self) -> None:
        if not self._schema_ready:
            self._retry(lambda: migrate(self.engine))
            self._schema_ready = True

    def _retry(self, fn: Callable[[], T]) -> T:
        """Run `fn`, retrying transient database errors within the lock budget."""
        for attempt in Retrying(retry=retry_if_exception(transient), stop=stop_after_delay(self.lock_budget_s),
                                wait=wait_exponential(multiplier=0.05, max=1.0), reraise=True):
            with attempt:
                return fn()
        raise AssertionError("unreachable")  # pragma: no cover

    def _conversation(self, session: Session, key: ConversationKey) -> Conversation | None:
        return session.exec(select(Conversation).where(Conversation.key == key.as_str())).first()

    def _conversation_for_update(self, conn: Connection, key: ConversationKey, team_id: str, now: datetime) -> int:
        """The conversation row's id, the row created if new and locked until the transaction ends.

        SQLite's BEGIN IMMEDIATE already serialises writers; on PostgreSQL the row lock
        (SELECT ... FOR UPDATE) does, and a conversation two workers create at the same moment
        is created once (the loser of the unique key reads the winner's row)."""
        found = conn.execute(_CONV_LOCK, {"key": key.as_str()}).scalar()
        if found is not None:
            return int(found)
        try:
            with conn.begin_nested():
                row = Conversation(key=key.as_str(), platform=key.platform, chat_id=key.chat_id,
                                   thread_id=key.thread_id, team_id=team_id, created_at=now, updated_at=now)
                return _new_id(conn.execute(_CONV_NEW, row.model_dump(exclude={"id"})))
        except IntegrityError:
            return int(conn.execute(_CONV_LOCK, {"key": key.as_str()}).scalar_one())

    @contextlib.contextmanager
    def begin_turn(self, key: ConversationKey, history_turns: int) -> Iterator[ConversationTurn]:
        """One turn's unit of work on its conversation: state and history read as it begins
        (past the lock budget, found=None and the turn runs without history), then `record`
        writes the turn, its suggestions and the new state in one transaction (or the spool)."""
        try:
            found: ConversationState | None = self.load_conversation(key, history_turns)
        except Exception as exc:
            log.warning("conversation %s: history unavailable, answering without it (%s)", key.as_str(),
                        str(exc).splitlines()[0][:200])
            found = None
        yield ConversationTurn(key, found, functools.partial(self.record_turn, key))

    def load_conversation(self, key: ConversationKey, history_turns: int) -> ConversationState:
        """State and recent history; raises if the database cannot be read within the budget."""
        return self._retry(lambda: self._load(key, history_turns))

    def _load(self, key: ConversationKey, history_turns: int) -> ConversationState:
        with self.read_engine.connect() as conn:
            conv = conn.execute(_CONV_STATE, {"key": key.as_str()}).first()
            if conv is None:
                return ConversationState(key=key, state="idle", history=[])
            rows = conn.execute(_HISTORY, {"conv_id": conv.id, "n": max(0, history_turns)}).all()
        history = [_prior(*row) for row in reversed(rows) if row[0]]
        return ConversationState(key=key, state=conv.state, history=history)

    def record_turn(self, key: ConversationKey, user_id: str, team_id: str, decision: Decision,
                    new_state: str) -> tuple[int | None, list[Suggestion]]:
        """Store the turn (id, suggestion ids); if the database cannot take it, spool it and
        return no id. Raises only when the turn could be recorded nowhere."""
        entry: dict[str, Any] = {"uid": decision.turn_uid, "key": [key.platform, key.chat_id, key.thread_id], "user_id": user_id,
                 "team_id": team_id, "new_state": new_state, "created_at": utcnow().isoformat(),
                 "record": decision.to_dict() | {"recorded": "database"}}
        try:
            self.replay_spool()
            self._ensure_schema()
            return self._retry(lambda: self._insert(entry))
        except Exception as exc:
            if self.spool is None:
                raise
            why = str(exc).splitlines()[0][:200]
            entry["record"] = entry["record"] | {"recorded": "spool"}
            try:
                self.spool.append(entry)
            except SpoolError as spool_exc:
                raise SpoolError(f"{spool_exc}; the database failed too ({why})") from exc
            log.warning("transcript database could not record turn %s (%s); spooled to %s",
                        decision.turn_uid, why, self.spool.path)
            return None, [Suggestion(0, s.text) for s in decision.suggestions]

    def replay_spool(self) -> ReplayResult:
        """Move spooled turns into the database, oldest first; a no-op when the spool is empty."""
        if self.spool is None or not self.spool.has_pending():
            return ReplayResult(0, 0)

        def write(entry: dict[str, Any]) -> None:
            self._ensure_schema()
            self._retry(lambda: self._insert(entry))

        result = self.spool.replay(write)
        self.replayed_total += result.replayed
        if result.replayed:
            log.warning("replayed %d spooled turn(s) into the transcript database; %d still waiting",
                        result.replayed, result.remaining)
        return result

    def pending_spooled(self) -> int:
        return self.spool.pending() if self.spool else 0

    def health(self) -> dict[str, Any]:
        """Can the database be read, and written (a row inserted and rolled back)?"""
        out: dict[str, Any] = {"database_readable": False, "database_writable": False, "database_error": ""}
        try:
            with Session(self.read_engine) as session:
                session.exec(select(func.count()).select_from(TurnRecord)).one()
            out["database_readable"] = True
            self._ensure_schema()
            with Session(self.engine) as session:
                session.add(Conversation(key=f"doctor:{utcnow().isoformat()}", platform="doctor", chat_id="-"))
                session.flush()
                session.rollback()
            out["database_writable"] = True
        except Exception as exc:
            out["database_error"] = str(exc).splitlines()[0][:300]
        return out

    def _insert(self, entry: dict[str, Any]) -> tuple[int, list[Suggestion]]:
        """One turn in one transaction; a uid already stored (a replay after a crash) is a no-op."""
        d: dict[str, Any] = entry["record"]
        key = ConversationKey(*entry["key"])
        with self.engine.begin() as conn:
            if entry.get("uid"):
                existing = conn.execute(_TURN_BY_UID, {"uid": entry["uid"]}).scalar()
                if existing is not None:
                    rows = conn.execute(_SUGG_OF_TURN, {"turn_id": existing}).all()
                    return int(existing), [Suggestion(i, t) for i, t in rows]
            now = utcnow()
            conv_id = self._conversation_for_update(conn, key, entry["team_id"], now)
            conn.execute(_CONV_SET_STATE, {"conv_id": conv_id, "new_state": entry["new_state"], "now": now})
            values = turn_values(conv_id, key, entry, d) | {"record": {}}  # the record, with its id, below
            # a uid committed by another worker meanwhile raises IntegrityError: the transaction rolls back
            turn_id = _new_id(conn.execute(_TURN_NEW, values))
            if entry["new_state"] == "pending_review":  # held by the risk score: into the review queue
                item = ReviewItem(turn_id=turn_id, origin="held", created_at=values["created_at"])
                item_id = _new_id(conn.execute(_REVIEW_NEW, item.model_dump(exclude={"id"})))
                # the admins are told after the turn, by the courier (bot/services/outbox.py)
                queue_announcements(conn, item_id, list(self.announce_to(d.get("scope"))))
            stored: list[Suggestion] = []
            for s in d.get("suggestions", []):
                stored.append(Suggestion(_new_id(conn.execute(_SUGG_NEW, {"turn_id": turn_id, "text": s["text"]})),
                                         s["text"]))
            record = d | {"turn_id": turn_id, "suggestions": [{"id": x.id, "text": x.text} for x in stored]}
            conn.execute(_TURN_SET_RECORD, {"turn_id": turn_id, "turn_record": record})
        return turn_id, stored

    def suggestion_text(self, suggestion_id: int) -> str | None:
        with Session(self.engine) as session:
            row = session.get(SuggestionRow, suggestion_id)
            return row.text if row else None

    def record_feedback(self, turn_id: int, user_id: str, value: int, comment: str = "", reason: str = "") -> Vote:
        """Store (or change) one user's vote on a turn; Vote.NONE if the turn does not exist. A
        thumbs-down with a reason puts the turn in the review queue (once per turn)."""
        with Session(self.engine) as session:
            if session.get(TurnRecord, turn_id) is None:
                return Vote.NONE
            row = session.exec(
                select(Feedback).where(Feedback.turn_id == turn_id, Feedback.user_id == user_id)
            ).first()
            vote = 1 if value > 0 else -1
            outcome = Vote.NEW if row is None else (Vote.SAME if row.value == vote else Vote.CHANGED)
            if row is None:
                row = Feedback(turn_id=turn_id, user_id=user_id, value=vote, comment=comment,
                               reason=reason)
            else:
                row.value, row.comment, row.reason, row.created_at = vote, comment, reason, utcnow()
            session.add(row)
            if value < 0 and reason:
                item = session.exec(select(ReviewItem).where(ReviewItem.turn_id == turn_id)).first()
                if item is None:
                    session.add(ReviewItem(turn_id=turn_id, origin="feedback", reason=reason, comment=comment))
                elif item.status == "open":
                    item.reason, item.comment = item.reason or reason, comment or item.comment
                    session.add(item)
            session.commit()
            return outcome

    def turn_ids(self, scope: str) -> list[int]:
        """The ids of one knowledge scope's turns."""
        with Session(self.read_engine) as session:
            return [int(i) for i in session.exec(select(TurnRecord.id).where(TurnRecord.scope == scope)).all() if i]

    def turn_row(self, turn_id: int) -> TurnRecord | None:
        """One turn's row (where it was asked, by whom, what), or None."""
        with Session(self.engine) as session:
            return session.get(TurnRecord, turn_id)

    def turn(self, turn_id: int) -> dict[str, Any] | None:
        with Session(self.engine) as session:
            row = session.get(TurnRecord, turn_id)
            return dict(row.record) | {"turn_id": row.id} if row else None

    def turns(self, limit: int = 1000) -> list[TurnRecord]:
        with Session(self.engine) as session:
            return list(session.exec(select(TurnRecord).order_by(TurnRecord.id).limit(limit)).all())  # type: ignore[arg-type]

    def feedback_for(self, turn_id: int) -> list[Feedback]:
        with Session(self.engine) as session:
            return list(session.exec(select(Feedback).where(Feedback.turn_id == turn_id)).all())

    def review_queue_depth(self) -> int:
        """Items waiting in the review queue (a gauge in /metrics)."""
        with Session(self.read_engine) as session:
            return int(session.exec(select(func.count()).select_from(ReviewItem)
                                    .where(ReviewItem.status == "open")).one())

    def most_asked(self, limit: int, scope: str | None = None) -> list[str]:
        """The questions answered most often (by their normalized form, the latest wording of
        each), most asked first: what people come for, offered as suggested prompts."""
        own: list[Any] = [] if scope is None else [TurnRecord.scope == scope]
        with Session(self.read_engine) as session:
            rows = session.exec(
                select(TurnRecord.normalized_question, func.count(), func.max(TurnRecord.id))
                .where(TurnRecord.refused == False, TurnRecord.normalized_question != "", *own)  # noqa: E712
                .group_by(TurnRecord.normalized_question)
                .order_by(func.count().desc(), func.max(TurnRecord.id).desc()).limit(limit)).all()
            latest = [int(r[2]) for r in rows if r[2] is not None]
            by_id = dict(session.exec(select(TurnRecord.id, TurnRecord.question)
                                      .where(col(TurnRecord.id).in_(latest))).all()) if latest else {}
        return [str(by_id[i]) for i in latest if i in by_id]

    def stats(self, scope: str | None = None) -> dict[str, Any]:
        """Turns, answer/refusal rates, refusals by reason, latency percentiles, feedback, the
        review queue: of every turn, or of one knowledge scope's turns."""
        own: list[Any] = [] if scope is None else [TurnRecord.scope == scope]
        with Session(self.engine) as session:
            total = session.exec(select(func.count()).select_from(TurnRecord).where(*own)).one()
            refused = session.exec(select(func.count()).select_from(TurnRecord).where(
                TurnRecord.refused == True, *own)).one()  # noqa: E712
            by_reason = dict(
                session.exec(
                    select(TurnRecord.refusal_reason, func.count()).where(TurnRecord.refused == True, *own)  # noqa: E712
                    .group_by(TurnRecord.refusal_reason)
                ).all()
            )
            latency = {"p50": round(_percentile(session, int(total), 0.5, scope), 1),
                       "p95": round(_percentile(session, int(total), 0.95, scope), 1)}
            joined = [] if scope is None else [col(TurnRecord.id) == Feedback.turn_id, *own]
            up = session.exec(select(func.count()).select_from(Feedback).where(Feedback.value > 0, *joined)).one()
            down = session.exec(select(func.count()).select_from(Feedback).where(Feedback.value < 0, *joined)).one()
            in_scope = [] if scope is None else [col(TurnRecord.id) == ReviewItem.turn_id, *own]
            queued = session.exec(select(func.count()).select_from(ReviewItem).where(
                ReviewItem.status == "open", *in_scope)).one()
        return {
            "turns": int(total),
            "answered": int(total - refused),
            "refused": int(refused),
            "answer_rate": round((total - refused) / total, 4) if total else 0.0,
            "refusal_rate": round(refused / total, 4) if total else 0.0,
            "refusals_by_reason": {k: int(v) for k, v in sorted(by_reason.items())},
            "latency_ms": latency,
            "feedback": {"up": int(up), "down": int(down)},
            "review_queue": int(queued),
        }
