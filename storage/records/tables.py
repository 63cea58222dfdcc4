"""The transcript tables (SQLModel): conversations with their persisted state, turns with
their full decision record, suggestions, feedback and the review queue. Alembic migrations
(storage/records/migrations) create and change them; storage/records/transcripts.py reads and writes them."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Index
from sqlalchemy.dialects.postgresql import JSONB
from sqlmodel import Field, SQLModel

from core.messages import ConversationKey
from storage.records.database import utcnow

# JSON columns (Alembic 0004): JSONB on PostgreSQL; SQLite keeps JSON text, read back as objects
JSON_TYPE = JSON().with_variant(JSONB(), "postgresql")


class Conversation(SQLModel, table=True):
    id: int | None = Field(default=None, primary_key=True)
    key: str = Field(index=True, unique=True)
    platform: str
    chat_id: str
    thread_id: str = ""
    team_id: str = ""
    state: str = "idle"
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)


class TurnRecord(SQLModel, table=True):
    __tablename__ = "turn"
    id: int | None = Field(default=None, primary_key=True)
    uid: str | None = Field(default=None, unique=True, index=True)  # the turn's own id, set before any database sees it
    conversation_id: int = Field(index=True, foreign_key="conversation.id")
    platform: str = Field(index=True)
    chat_id: str
    thread_id: str = ""
    team_id: str = ""
    user_id: str = Field(index=True)
    created_at: datetime = Field(default_factory=utcnow, index=True)
    question: str
    normalized_question: str
    retrieval_query: str
    answer: str
    refused: bool = Field(index=True)
    refusal_reason: str = Field(default="", index=True)
    status: str
    state: str = Field(index=True)
    reasons: list[str] = Field(default_factory=list, sa_type=JSON_TYPE)
    checks_passed: list[str] = Field(default_factory=list, sa_type=JSON_TYPE)
    checks_failed: list[str] = Field(default_factory=list, sa_type=JSON_TYPE)
    scores: dict[str, Any] = Field(default_factory=dict, sa_type=JSON_TYPE)
    llm_called: bool = False
    sources: list[dict[str, Any]] = Field(default_factory=list, sa_type=JSON_TYPE)
    uncovered_claims: list[str] = Field(default_factory=list, sa_type=JSON_TYPE)
    latency_ms: dict[str, float] = Field(default_factory=dict, sa_type=JSON_TYPE)
    latency_total_ms: float = Field(default=0.0, index=True)  # stats reads percentiles in this order
    index_version: str = ""
    config_hash: str = ""
    language: str = "en"
    scope: str = Field(default="", index=True)  # the knowledge scope it was answered from (Alembic 0009; "" = none)
    record: dict[str, Any] = Field(default_factory=dict, sa_type=JSON_TYPE)  # the full decision record


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
    reason: str = ""  # a thumbs-down's why: wrong, unanswered, should_answer, other (core/feedback.py)
    created_at: datetime = Field(default_factory=utcnow)


class ReviewItem(SQLModel, table=True):
    """One turn in the review queue (Alembic 0005): a held draft, or a user's complaint.

    One item per turn; `status` moves from "open" to the reviewer's decision exactly once
    (storage/records/reviews.py), so two admins pressing buttons at once cannot both decide."""

    __tablename__ = "review_item"
    id: int | None = Field(default=None, primary_key=True)
    turn_id: int = Field(index=True, unique=True, foreign_key="turn.id")
    origin: str  # "held" (the risk score held the draft) or "feedback" (a user said it was wrong)
    reason: str = ""
    comment: str = ""
    status: str = Field(default="open", index=True)  # open | approved | edited | rejected | faq
    reviewer: str = ""  # platform:user id of the admin who decided
    final_answer: str = ""
    created_at: datetime = Field(default_factory=utcnow)
    decided_at: datetime | None = None


class OutboxRow(SQLModel, table=True):
    """Something owed to a platform outside a turn (Alembic 0006, kinds 0012), pending until a
    worker holding the platform's connection has sent it (storage/records/outbox.py): a reviewed
    decision on its way to the user (one per review item), or a new item's announcement to the
    admins of one platform (one per item and platform)."""

    __tablename__ = "outbox"
    __table_args__ = (Index("ux_outbox_item_kind_platform", "item_id", "kind", "platform", unique=True),)
    id: int | None = Field(default=None, primary_key=True)
    item_id: int = Field(index=True, foreign_key="review_item.id")
    kind: str = "decision"  # decision | announcement
    platform: str = Field(index=True)
    chat_id: str  # a decision's conversation; "" for an announcement
    thread_id: str = ""
    decision: dict[str, Any] = Field(default_factory=dict, sa_type=JSON_TYPE)  # Decision.to_dict(); {} for an announcement
    status: str = Field(default="pending", index=True)  # pending | sent | dropped
    attempts: int = 0
    last_error: str = ""
    due_at: float = 0.0  # epoch seconds: not tried before this (a claim's lease, or a failure's back-off)
    claimed_by: str = ""  # the worker trying it now
    created_at: datetime = Field(default_factory=utcnow)
    sent_at: datetime | None = None


def turn_values(conversation_id: int, key: ConversationKey, entry: dict[str, Any], d: dict[str, Any]) -> dict[str, Any]:
    """The turn table's columns for one decision record (`Decision.to_dict()` shape), as written
    by one INSERT (storage/records/transcripts.py; `record` is filled in once the row has its id)."""
    created = entry.get("created_at")
    return {
        "uid": entry.get("uid") or None, "conversation_id": conversation_id, "platform": key.platform,
        "chat_id": key.chat_id, "thread_id": key.thread_id, "team_id": entry["team_id"], "user_id": entry["user_id"],
        "created_at": datetime.fromisoformat(created) if created else utcnow(),
        "question": d["question"], "normalized_question": d["normalized_question"],
        "retrieval_query": d["retrieval_query"], "answer": d["answer"], "refused": d["refused"],
        "refusal_reason": d["refusal_reason"], "status": d["status"], "state": d["state"], "reasons": list(d["reasons"]),
        "checks_passed": list(d["checks_passed"]), "checks_failed": list(d["checks_failed"]), "scores": dict(d["scores"]),
        "llm_called": d["llm_called"], "sources": list(d["sources"]), "uncovered_claims": list(d["uncovered_claims"]),
        "latency_ms": dict(d["latency_ms"]), "latency_total_ms": d["latency_ms"].get("total", 0.0),
        "index_version": d["index_version"], "config_hash": d["config_hash"], "language": d["language"],
        "scope": d.get("scope") or "", "record": dict(d),
    }

