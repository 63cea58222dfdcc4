"""Platform-neutral messages that cross the boundary between adapters and core.

The decision record of a turn and what it carries (sources, suggestions, claims, the reading of
the question) are pydantic models: stored as JSON in the transcripts and the outbox, shown by
`/why` and `groundbot ask --json`, and parsed back by the same model, so their shape is written
once. The working messages of a turn (hits, generations) stay plain dataclasses.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, field_serializer
from pydantic.dataclasses import dataclass as record

from core.reasons import Reason, Route, State, Status

# Incoming.scope of a chat that no knowledge scope serves (and no default scope): refused unread
NOT_SET_UP = "-"


class Answering(StrEnum):
    """Which messages of a group chat (a Slack channel, a Telegram group) groundbot answers."""

    MENTIONS = "mentions"  # only those that mention it (or reply to it)
    QUESTIONS = "questions"  # also every top-level message with a question mark
    MESSAGES = "messages"  # also every other top-level message of a person


@dataclass(frozen=True)
class ChatPolicy:
    """How groundbot takes part in one group chat, as its knowledge scope (or the platform's
    default) says. A message answered without a mention is answered only when groundbot can
    answer: a refusal there stays quiet (or is only this reaction), so a busy channel does not
    fill with refusals; the turn is recorded all the same."""

    answering: Answering = Answering.MENTIONS
    refusal_reaction: str = ""  # a quiet refusal's emoji name on the question; "" = nothing
    per_minute: int = 10  # messages answered without a mention per chat and minute; the rest are left alone
    experts: tuple[str, ...] = ()  # who "Ask a person" tags (the platform's user or group ids); () = no button

    def answers(self, text: str) -> bool:
        """Whether a top-level message without a mention is one to answer under this policy."""
        if self.answering == Answering.MESSAGES:
            return bool(text.strip())
        return self.answering == Answering.QUESTIONS and asks_something(text)


class ExpertReply(StrEnum):
    """What became of an expert's reply in a chat: taken as an FAQ draft, left for a later one (an
    emoji, a question back: the question still waits for a person), or not about a handed question."""

    TAKEN = "taken"
    NOT_AN_ANSWER = "not_an_answer"
    NONE = "none"


@dataclass(frozen=True)
class Escalated:
    """A refused question handed to people: whom to tag, and whether this press handed it over
    (False: someone pressed before; the experts were tagged then)."""

    question: str
    experts: tuple[str, ...]
    new: bool
    chat_id: str = ""  # where the turn was asked: the experts are tagged in its thread
    thread_id: str = ""


_CODE = re.compile(r"```.*?```|`[^`\n]*`|<[^>\s]+>|https?://\S+", re.S)  # code, Slack links, URLs
_QUESTION_MARK = re.compile(r"[?\u061f\uff1f]")  # ?, Arabic-script ؟, full-width ？


def asks_something(text: str) -> bool:
    """A question mark outside code and links: the mark people put on what they ask, in every
    language groundbot serves (a URL's query string or a regex in backticks does not count)."""
    return bool(_QUESTION_MARK.search(_CODE.sub(" ", text)))


class Platform(StrEnum):
    """Where a conversation happens: a chat platform, the console, or a door without a chat (the
    `ask` command, HTTP's /api/ask, MCP). The values are what records, rows and config store."""

    CONSOLE = "console"
    CLI = "cli"
    API = "api"
    MCP = "mcp"
    SLACK = "slack"
    TELEGRAM = "telegram"


@dataclass(frozen=True)
class ConversationKey:
    """Where a conversation lives: platform (a Platform's value), chat and (optional) thread."""

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


class HitKind(StrEnum):
    """What a retrieved chunk is: a passage of a document, or an FAQ entry (its question and answer)."""

    DOC = "doc"
    FAQ = "faq"


class ReadingMethod(StrEnum):
    """How a turn's question was read in its conversation (core/retrieve/resolve.py, search.py)."""

    NONE = "none"  # no earlier turn
    STANDALONE = "standalone"  # needs no word of the earlier turns
    TERMS = "terms"  # with the earlier words the term selector picked
    GLUED = "glued"  # searched glued after the question before it
    MODEL = "model"  # a language model's rewrite
    # the model's rewrite was not used: the local reading stands
    STANDALONE_FALLBACK = "standalone-fallback"
    TERMS_FALLBACK = "terms-fallback"
    GLUED_FALLBACK = "glued-fallback"

    @property
    def fallback(self) -> ReadingMethod:
        """This local reading, standing because a model's rewrite was not used."""
        return ReadingMethod(f"{self.value}-fallback")


class History(StrEnum):
    """What a turn knew of its conversation's earlier turns."""

    LOADED = "loaded"
    NONE = "none"  # a new conversation
    UNAVAILABLE = "unavailable"  # the database could not give it: the turn ran without it
    NOT_KNOWN = ""  # a record made outside a turn


class Recorded(StrEnum):
    """Where a turn's decision record went."""

    DATABASE = "database"
    SPOOL = "spool"  # replayed into the database later
    NOWHERE = ""  # not recorded


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
    kind: HitKind = HitKind.DOC
    faq_question: str = ""
    faq_answer: str = ""
    url: str = ""
    position: int = 0
    heading_similarity: float = 0.0  # the question's cosine to the heading the chunk was found by (0 = not by it)
    answer_probability: float | None = None  # the passage reader's probability that the chunk answers (None = not read)


def _alias(stored: str, name: str) -> Any:
    """A field stored under a short key (`stored`) and read back under either name."""
    return Field(validation_alias=AliasChoices(name, stored), serialization_alias=stored)


@record(frozen=True)
class Source:
    """A cited source as shown to the user (stored as `n`, `doc`, ...: the record's JSON keys)."""

    number: int = _alias("n", "number")
    doc_id: str = _alias("doc", "doc_id")
    chunk_id: str = ""
    title: str = ""
    heading: str = ""
    source: str = ""
    url: str = ""
    score: float = 0.0

    @field_serializer("score")
    def _rounded(self, score: float) -> float:
        return round(score, 4)


@record(frozen=True)
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
    reason: Reason | None = None  # when text is empty: the reason code the generator gives for not answering
    detail: str = ""  # and what `/why` says of it (numbers, thresholds); the asker reads the reason's own text


@record
class ClaimRecord:
    """One verified claim as the decision record keeps it: its cited chunks, the evidence it was
    mapped to, why it falls short (`missing`) and whether it is supported. Risk, template answers,
    the review queue and `/why` read these fields."""

    claim: str = Field(validation_alias=AliasChoices("claim", "text"))
    citations: list[int] = Field(default_factory=list)
    support: float = 0.0
    evidence: list[str] = Field(default_factory=list)
    evidence_chunks: list[int] = Field(default_factory=list)
    missing: list[str] = Field(default_factory=list, validation_alias=AliasChoices("missing", "missing_critical"))
    supported: bool = False
    features: dict[str, float] = Field(default_factory=dict)
    judge: float | None = None  # the claim judge's probability, for a generated answer's claim


@dataclass
class Verification:
    """The verifier's verdict on one answer."""

    status: Status
    reasons: list[Reason] = field(default_factory=list)
    uncovered_claims: list[str] = field(default_factory=list)
    citation_density: float = 0.0
    supported_claims: int = 0
    total_claims: int = 0
    grounding_score: float = 0.0
    claim_map: list[ClaimRecord] = field(default_factory=list)
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


@record(frozen=True)
class Resolution:
    """How a turn's question was read (core/retrieve/resolve.py): `resolved` is what every stage
    reads (stored as `reading`), `shown` what the user is told it was answered as ("" = nothing,
    or only what it followed on from)."""

    asked: str
    resolved: str = Field(validation_alias=AliasChoices("resolved", "reading"), serialization_alias="reading")
    follow_up: bool = False
    method: ReadingMethod = ReadingMethod.NONE
    why: str = ""
    previous: str = ""  # the earlier question it leans on, as asked
    previous_section: str = ""  # the section that answered it ("" when refused)
    new_terms: tuple[str, ...] = ()  # what it asks that the earlier question did not
    unnamed: str = ""  # "this burger": something the question points at that the conversation never named
    terms: tuple[str, ...] = ()  # the earlier words the term selector picked
    leaning: str = ""  # the question glued after the one before: one more search
    shown: str = ""  # a well-formed reading the user may be shown ("(Answering: ...)")

    @property
    def stated(self) -> str:
        """The question an answer is held to (its words checked against the sources, its claims
        verified with it): the user's own, or a language model's rewrite of it, never a bag of
        selected words."""
        return self.resolved if self.method == ReadingMethod.MODEL else self.asked


class Decision(BaseModel):
    """The decision record of one turn: everything needed to explain it later. `to_dict()` is
    its JSON form (transcripts, outbox, `/why`, `groundbot ask --json`), `from_dict` its inverse."""

    model_config = ConfigDict(extra="ignore")

    question: str
    normalized_question: str
    retrieval_query: str
    answer: str
    refused: bool
    refusal_reason: Reason | Literal[""]
    refusal_message: str
    explanation: str
    status: Status
    state: State
    reasons: list[Reason]
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
    claim_map: list[ClaimRecord] = Field(default_factory=list)
    draft: str = ""  # the generated wording when it was not sent as written: held, replaced by quotes, or pruned
    removed_claims: list[str] = Field(default_factory=list)  # claims left out of the answer sent: the sources do not state them
    risk: float | None = None  # core/turn/risk.py: 0..1 for an answer the verifier let through; None for a refusal
    risk_parts: dict[str, float] = Field(default_factory=dict)
    route: Route | None = None  # None: not routed (a record made outside a turn)
    turn_uid: str = ""  # the turn's own id, known before any database has seen it
    history: History = History.NOT_KNOWN
    recorded: Recorded = Recorded.NOWHERE
    scope: str | None = None  # the knowledge scope the turn was answered from (None = the whole knowledge base)
    resolved_question: str = ""  # the question shown as answered, when a follow-up was read as one ("" = as asked)
    resolution: Resolution | None = None  # how and why the question was read in its conversation
    # what `/why` adds to `explanation` (which the user reads, in their language): the numbers,
    # thresholds or an error's class behind the refusal ("" = nothing to add)
    detail: str = ""
    # the answer meets the bar for a message nobody asked groundbot (a channel answered without a
    # mention): the passage reader trusts its source at `[reader] unprompted_probability`
    unprompted: bool = False

    @property
    def held(self) -> bool:
        """Waiting for a person's review: the user has been told so, the answer is not delivered."""
        return self.state == State.PENDING_REVIEW

    @property
    def warned(self) -> bool:
        """The answer goes out with the warning note: the verifier passed it with a warning, and it
        is neither the sources quoted verbatim nor an answer whose doubtful claims were left out
        (that one says what was left out instead)."""
        return self.status == Status.WARN and self.route != Route.TEMPLATE and not self.removed_claims

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready view (`groundbot ask --json`, transcripts, `/why`)."""
        return self.model_dump(mode="json", by_alias=True)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Decision:
        """The decision back from its `to_dict()` form (the outbox, stored records)."""
        return cls.model_validate(data)

    def decision_key(self) -> dict[str, Any]:
        """The parts that must be identical for the same question, index and config."""
        d = self.to_dict()
        for k in ("turn_id", "latency_ms", "suggestions", "turn_uid", "recorded"):
            d.pop(k)
        d["suggestion_texts"] = [s.text for s in self.suggestions]
        return d
