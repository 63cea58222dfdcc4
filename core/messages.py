"""Platform-neutral messages that cross the boundary between adapters and core."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any, TypedDict

# Incoming.scope of a chat that no knowledge scope serves (and no default scope): refused unread
NOT_SET_UP = "-"


@dataclass(frozen=True)
class ConversationKey:
    """Where a conversation lives: platform, chat and (optional) thread."""

    platform: str
    chat_id: str
    thread_id: str = ""

    def as_str(self) -> str:
        return f"{self.platform}:{self.chat_id}:{self.thread_id}"


@dataclass(frozen=True)
class Incoming:
    """One user message, as an adapter hands it to core."""

    key: ConversationKey
    user_id: str
    text: str
    team_id: str = ""
    suggestion_id: int | None = None  # set when the user picked an offered suggestion
    rejection: str = ""  # set by an adapter that could not read the message (e.g. not valid UTF-8): why
    uid: str = ""  # the turn's uid when the platform message fixes it (message_uid); else a new one
    scope: str | None = None  # the knowledge scope that answers it (bot/scopes.py); None = the whole knowledge base


def message_uid(*parts: object) -> str:
    """A turn uid fixed by the platform message it answers (platform, bot or team, chat, message
    id): a message answered again after its worker died is then recorded once, not twice."""
    return uuid.uuid5(uuid.NAMESPACE_URL, "groundbot:" + ":".join(map(str, parts))).hex


@dataclass(frozen=True)
class Hit:
    """One retrieved chunk with its scores."""

    chunk_id: str
    doc_id: str
    source: str
    title: str
    heading: str
    text: str
    similarity: float  # cosine similarity of the question to this chunk
    fused: float = 0.0  # reciprocal-rank fusion score (ranking only)
    keyword_rank: int | None = None  # rank in the full-text results, if present
    kind: str = "doc"  # "doc" or "faq"
    faq_question: str = ""
    faq_answer: str = ""
    url: str = ""
    position: int = 0
    heading_similarity: float = 0.0  # the question's cosine to the heading the chunk was found by (0 = not by it)
    answer_probability: float | None = None  # the passage reader's probability that the chunk answers (None = not read)


@dataclass(frozen=True)
class Source:
    """A cited source as shown to the user."""

    number: int
    doc_id: str
    chunk_id: str
    title: str
    heading: str
    source: str
    url: str
    score: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "n": self.number,
            "doc": self.doc_id,
            "chunk_id": self.chunk_id,
            "title": self.title,
            "heading": self.heading,
            "source": self.source,
            "url": self.url,
            "score": round(self.score, 4),
        }


@dataclass(frozen=True)
class Suggestion:
    """A better question to ask; `id` is what buttons carry (never the text)."""

    id: int
    text: str


@dataclass
class Generation:
    """What a generator produced: answer text with [C#] citations."""

    text: str
    llm_called: bool
    confidence: float | None = None  # generation confidence from logprobs, if any
    error: str = ""  # set when the generator failed (LLM down, timeout)
    faq: bool = False
    reason: str = ""  # when text is empty: the reason code the generator gives for not answering
    explanation: str = ""


class ClaimRow(TypedDict):
    """One row of the claim map in a decision record (JSON)."""

    claim: str
    citations: list[int]
    support: float
    evidence: list[str]
    evidence_chunks: list[int]
    missing: list[str]
    supported: bool
    features: dict[str, float]
    judge: float | None


@dataclass
class Verification:
    """The verifier's verdict on one answer."""

    status: str  # PASS | WARN | REFUSE
    reasons: list[str] = field(default_factory=list)
    uncovered_claims: list[str] = field(default_factory=list)
    citation_density: float = 0.0
    supported_claims: int = 0
    total_claims: int = 0
    grounding_score: float = 0.0
    claim_map: list[ClaimRow] = field(default_factory=list)
    checks_passed: list[str] = field(default_factory=list)
    checks_failed: list[str] = field(default_factory=list)
    kept_answer: str = ""  # the answer without its unsupported claims, when some were left out ("" = as written)
    removed_claims: list[str] = field(default_factory=list)  # the claims left out of kept_answer


def section_label(title: str, heading: str) -> str:
    """A chunk's section as a conversation remembers it: "title > heading"."""
    return " > ".join(p for p in (title, heading) if p)


@dataclass(frozen=True)
class PriorTurn:
    """An earlier turn of the conversation, as the next one reads it: what was asked, what it was
    understood as, in which knowledge scope, and which section answered it ("" when refused)."""

    question: str
    answer: str
    resolved: str = ""  # the resolved question ("" = as asked)
    scope: str = ""
    section: str = ""  # "title > heading" of the first cited source

    @property
    def meant(self) -> str:
        """The question as it was understood."""
        return self.resolved or self.question


@dataclass
class Decision:
    """The decision record of one turn: everything needed to explain it later."""

    question: str
    normalized_question: str
    retrieval_query: str
    answer: str
    refused: bool
    refusal_reason: str
    refusal_message: str
    explanation: str
    status: str
    state: str
    reasons: list[str]
    checks_passed: list[str]
    checks_failed: list[str]
    scores: dict[str, float | int | None]
    llm_called: bool
    sources: list[Source]
    suggestions: list[Suggestion]
    uncovered_claims: list[str]
    latency_ms: dict[str, float]
    index_version: str
    config_hash: str
    language: str
    turn_id: int | None = None
    claim_map: list[dict[str, Any]] = field(default_factory=list)
    draft: str = ""  # the generated wording when it was not sent as written: held, replaced by quotes, or pruned
    removed_claims: list[str] = field(default_factory=list)  # claims left out of the answer sent: the sources do not state them
    risk: float | None = None  # core/turn/risk.py: 0..1 for an answer the verifier let through; None for a refusal
    risk_parts: dict[str, float] = field(default_factory=dict)
    route: str = ""  # reply | template | hold | refuse
    turn_uid: str = ""  # the turn's own id, known before any database has seen it
    history: str = ""  # "loaded", "none" (a new conversation) or "unavailable" (the turn ran without it)
    recorded: str = ""  # "database", "spool" (replayed into the database later) or "" (not recorded)
    scope: str | None = None  # the knowledge scope the turn was answered from (None = the whole knowledge base)
    resolved_question: str = ""  # the question every stage read, when a follow-up was resolved ("" = as asked)
    resolution: dict[str, Any] = field(default_factory=dict)  # how and why (core/retrieve/resolve.py)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready view (`groundbot ask --json`, transcripts, `/why`)."""
        return {
            "turn_id": self.turn_id,
            "question": self.question,
            "normalized_question": self.normalized_question,
            "retrieval_query": self.retrieval_query,
            "answer": self.answer,
            "refused": self.refused,
            "refusal_reason": self.refusal_reason,
            "refusal_message": self.refusal_message,
            "explanation": self.explanation,
            "status": self.status,
            "state": self.state,
            "reasons": list(self.reasons),
            "checks_passed": list(self.checks_passed),
            "checks_failed": list(self.checks_failed),
            "scores": dict(self.scores),
            "llm_called": self.llm_called,
            "sources": [s.to_dict() for s in self.sources],
            "suggestions": [{"id": s.id, "text": s.text} for s in self.suggestions],
            "uncovered_claims": list(self.uncovered_claims),
            "claim_map": list(self.claim_map),
            "latency_ms": dict(self.latency_ms),
            "index_version": self.index_version,
            "config_hash": self.config_hash,
            "language": self.language,
            "draft": self.draft,
            "removed_claims": list(self.removed_claims),
            "risk": self.risk,
            "risk_parts": dict(self.risk_parts),
            "route": self.route,
            "turn_uid": self.turn_uid,
            "history": self.history,
            "recorded": self.recorded,
            "scope": self.scope,
            "resolved_question": self.resolved_question,
            "resolution": dict(self.resolution),
        }

    def decision_key(self) -> dict[str, Any]:
        """The parts that must be identical for the same question, index and config."""
        d = self.to_dict()
        for k in ("turn_id", "latency_ms", "suggestions", "turn_uid", "recorded"):
            d.pop(k)
        d["suggestion_texts"] = [s.text for s in self.suggestions]
        return d
