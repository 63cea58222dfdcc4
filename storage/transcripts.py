"""Transcripts with SQLModel: conversations (with persisted state), turns, suggestions, feedback.

SQLite runs in WAL mode and every transaction starts with BEGIN IMMEDIATE, so a
read-modify-write of a conversation's state cannot silently lose an update when
several workers share the file. `database_url` may name PostgreSQL instead.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import Engine
from sqlmodel import Field, Session, SQLModel, create_engine, func, select

from core.messages import ConversationKey, Decision, Suggestion
from core.ports import ConversationState


def _now() -> datetime:
    return datetime.now(UTC)


class Conversation(SQLModel, table=True):
    id: int | None = Field(default=None, primary_key=True)
    key: str = Field(index=True, unique=True)
    platform: str
    chat_id: str
    thread_id: str = ""
    team_id: str = ""
    state: str = "idle"
    created_at: datetime = Field(default_factory=_now)
    updated_at: datetime = Field(default_factory=_now)


class TurnRecord(SQLModel, table=True):
    __tablename__ = "turn"
    id: int | None = Field(default=None, primary_key=True)
    conversation_id: int = Field(index=True, foreign_key="conversation.id")
    platform: str = Field(index=True)
    chat_id: str
    thread_id: str = ""
    team_id: str = ""
    user_id: str = Field(index=True)
    created_at: datetime = Field(default_factory=_now, index=True)
    question: str
    normalized_question: str
    retrieval_query: str
    answer: str
    refused: bool = Field(index=True)
    refusal_reason: str = Field(default="", index=True)
    status: str
    state: str = Field(index=True)
    reasons: str = "[]"
    checks_passed: str = "[]"
    checks_failed: str = "[]"
    scores: str = "{}"
    llm_called: bool = False
    sources: str = "[]"
    uncovered_claims: str = "[]"
    latency_ms: str = "{}"
    latency_total_ms: float = 0.0
    index_version: str = ""
    config_hash: str = ""
    language: str = "en"
    record: str = "{}"  # the full decision record as JSON


class SuggestionRow(SQLModel, table=True):
    __tablename__ = "suggestion"
    id: int | None = Field(default=None, primary_key=True)
    turn_id: int = Field(index=True, foreign_key="turn.id")
    text: str


class Feedback(SQLModel, table=True):
    id: int | None = Field(default=None, primary_key=True)
    turn_id: int = Field(index=True, foreign_key="turn.id")
    user_id: str
    value: int  # +1 thumbs up, -1 thumbs down
    comment: str = ""
    created_at: datetime = Field(default_factory=_now)


def _sqlite_immediate(engine: Engine) -> None:
    """WAL + BEGIN IMMEDIATE for pysqlite (which otherwise defers and upgrades locks late)."""

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute("PRAGMA busy_timeout=10000")
        cur.execute("PRAGMA foreign_keys=ON")
        cur.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Any) -> None:
        conn.exec_driver_sql("BEGIN IMMEDIATE")


def make_engine(url: str) -> Engine:
    if url.startswith("sqlite"):
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 10})
        _sqlite_immediate(engine)
    else:
        engine = create_engine(url, pool_pre_ping=True)
    SQLModel.metadata.create_all(engine)
    return engine


def _percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    values = sorted(values)
    pos = (len(values) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(values) - 1)
    return values[lo] + (values[hi] - values[lo]) * (pos - lo)


class SqlTranscriptStore:
    """TranscriptStore port over SQLModel (SQLite or PostgreSQL)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.engine = make_engine(url)

    def _conversation(self, session: Session, key: ConversationKey) -> Conversation | None:
        return session.exec(select(Conversation).where(Conversation.key == key.as_str())).first()

    def load_conversation(self, key: ConversationKey, history_turns: int) -> ConversationState:
        with Session(self.engine) as session:
            conv = self._conversation(session, key)
            if conv is None:
                return ConversationState(key=key, state="idle", history=[])
            rows = session.exec(
                select(TurnRecord).where(TurnRecord.conversation_id == conv.id)
                .order_by(TurnRecord.id.desc()).limit(max(0, history_turns))  # type: ignore[union-attr]
            ).all()
            history = [(r.question, r.answer) for r in reversed(rows) if r.question]
            return ConversationState(key=key, state=conv.state, history=history)

    def record_turn(self, key: ConversationKey, user_id: str, team_id: str, decision: Decision,
                    new_state: str) -> tuple[int, list[Suggestion]]:
        with Session(self.engine) as session:
            conv = self._conversation(session, key)
            if conv is None:
                conv = Conversation(key=key.as_str(), platform=key.platform, chat_id=key.chat_id,
                                    thread_id=key.thread_id, team_id=team_id)
            conv.state = new_state
            conv.updated_at = _now()
            session.add(conv)
            session.flush()
            assert conv.id is not None
            d = decision.to_dict()
            turn = TurnRecord(
                conversation_id=conv.id, platform=key.platform, chat_id=key.chat_id, thread_id=key.thread_id,
                team_id=team_id, user_id=user_id, question=decision.question,
                normalized_question=decision.normalized_question, retrieval_query=decision.retrieval_query,
                answer=decision.answer, refused=decision.refused, refusal_reason=decision.refusal_reason,
                status=decision.status, state=decision.state, reasons=json.dumps(decision.reasons),
                checks_passed=json.dumps(decision.checks_passed), checks_failed=json.dumps(decision.checks_failed),
                scores=json.dumps(decision.scores), llm_called=decision.llm_called,
                sources=json.dumps(d["sources"], ensure_ascii=False),
                uncovered_claims=json.dumps(decision.uncovered_claims, ensure_ascii=False),
                latency_ms=json.dumps(decision.latency_ms), latency_total_ms=decision.latency_ms.get("total", 0.0),
                index_version=decision.index_version, config_hash=decision.config_hash,
                language=decision.language, record=json.dumps(d, ensure_ascii=False),
            )
            session.add(turn)
            session.flush()
            assert turn.id is not None
            stored: list[Suggestion] = []
            for s in decision.suggestions:
                row = SuggestionRow(turn_id=turn.id, text=s.text)
                session.add(row)
                session.flush()
                assert row.id is not None
                stored.append(Suggestion(row.id, s.text))
            session.commit()
            return turn.id, stored

    def suggestion_text(self, suggestion_id: int) -> str | None:
        with Session(self.engine) as session:
            row = session.get(SuggestionRow, suggestion_id)
            return row.text if row else None

    def record_feedback(self, turn_id: int, user_id: str, value: int, comment: str = "") -> bool:
        """Store (or change) one user's vote on a turn; False if the turn does not exist."""
        with Session(self.engine) as session:
            if session.get(TurnRecord, turn_id) is None:
                return False
            row = session.exec(
                select(Feedback).where(Feedback.turn_id == turn_id, Feedback.user_id == user_id)
            ).first()
            if row is None:
                row = Feedback(turn_id=turn_id, user_id=user_id, value=1 if value > 0 else -1, comment=comment)
            else:
                row.value, row.comment, row.created_at = (1 if value > 0 else -1), comment, _now()
            session.add(row)
            session.commit()
            return True

    def turn(self, turn_id: int) -> dict[str, Any] | None:
        with Session(self.engine) as session:
            row = session.get(TurnRecord, turn_id)
            return json.loads(row.record) | {"turn_id": row.id} if row else None

    def turns(self, limit: int = 1000) -> list[TurnRecord]:
        with Session(self.engine) as session:
            return list(session.exec(select(TurnRecord).order_by(TurnRecord.id).limit(limit)).all())  # type: ignore[arg-type]

    def feedback_for(self, turn_id: int) -> list[Feedback]:
        with Session(self.engine) as session:
            return list(session.exec(select(Feedback).where(Feedback.turn_id == turn_id)).all())

    def conversation_state(self, key: ConversationKey) -> str | None:
        with Session(self.engine) as session:
            conv = self._conversation(session, key)
            return conv.state if conv else None

    def pending_review(self, limit: int = 20) -> list[dict[str, Any]]:
        with Session(self.engine) as session:
            rows = session.exec(
                select(TurnRecord).where(TurnRecord.state == "pending_review").order_by(TurnRecord.id).limit(limit)  # type: ignore[arg-type]
            ).all()
            return [{"turn_id": r.id, "question": r.question, "draft": json.loads(r.record).get("draft", "")} for r in rows]

    def stats(self) -> dict[str, Any]:
        """Turns, answer/refusal rates, refusals by reason, latency percentiles, feedback."""
        with Session(self.engine) as session:
            total = session.exec(select(func.count()).select_from(TurnRecord)).one()
            refused = session.exec(select(func.count()).select_from(TurnRecord).where(TurnRecord.refused == True)).one()  # noqa: E712
            by_reason = dict(
                session.exec(
                    select(TurnRecord.refusal_reason, func.count()).where(TurnRecord.refused == True)  # noqa: E712
                    .group_by(TurnRecord.refusal_reason)
                ).all()
            )
            latencies = [float(x) for x in session.exec(select(TurnRecord.latency_total_ms)).all()]
            up = session.exec(select(func.count()).select_from(Feedback).where(Feedback.value > 0)).one()
            down = session.exec(select(func.count()).select_from(Feedback).where(Feedback.value < 0)).one()
        return {
            "turns": int(total),
            "answered": int(total - refused),
            "refused": int(refused),
            "answer_rate": round((total - refused) / total, 4) if total else 0.0,
            "refusal_rate": round(refused / total, 4) if total else 0.0,
            "refusals_by_reason": {k: int(v) for k, v in sorted(by_reason.items())},
            "latency_ms": {"p50": round(_percentile(latencies, 0.5), 1), "p95": round(_percentile(latencies, 0.95), 1)},
            "feedback": {"up": int(up), "down": int(down)},
        }
