"""What a turn knows so far: the message, the question as asked, its conversation, and each
stage's typed result. No stage writes here: each returns its result in its `Outcome`, and the
stage loop (core/turn/stages.py) files it; the decision record (core/turn/record.py) and a
refusal's suggestions read it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from core.gate.chain import GateResult
from core.messages import Generation, History, Hit, Incoming, Verification
from core.ports import ConversationState
from core.reasons import Reason, Route
from core.retrieve.resolve import Resolution
from core.retrieve.search import Retrieved
from core.turn.risk import Risk


@dataclass(frozen=True)
class Verified:
    """What the verify stage decided: the verifier's verdict and, for an answer it let through,
    the answer's risk and route."""

    verification: Verification
    risk: Risk | None = None
    route: Route = Route.REFUSE


Found = Retrieved | GateResult | Generation | Verified  # what a stage hands on, one type per stage


@dataclass
class TurnContext:
    """Everything a turn has learned so far."""

    msg: Incoming
    asked: str  # the question as asked (cleaned and cut to the limit)
    language: str
    conversation: ConversationState | None = None
    history: History = History.NOT_KNOWN
    retrieved: Retrieved | None = None
    gate: GateResult | None = None
    generation: Generation | None = None
    verified: Verified | None = None
    reason: Reason | None = None
    explanation: str = ""  # what the asker reads, in their language ("" = the reason code's own)
    detail: str = ""  # what `/why` and the record add: numbers, thresholds, an error's class
    latency: dict[str, float] = field(default_factory=dict)

    def take(self, found: Found | None) -> None:
        """File a stage's result (the stage loop calls this; stages only return theirs)."""
        if isinstance(found, Retrieved):
            self.retrieved = found
        elif isinstance(found, GateResult):
            self.gate = found
        elif isinstance(found, Generation):
            self.generation = found
        elif isinstance(found, Verified):
            self.verified = found

    @property
    def resolution(self) -> Resolution | None:
        """How the question is read: as the gates left it (the reader may prefer it as typed), else
        as retrieval read it in its conversation; None before retrieval."""
        if self.gate is not None and self.gate.resolution is not None:
            return self.gate.resolution
        return self.retrieved.resolution if self.retrieved is not None else None

    @property
    def question(self) -> str:
        """The question every later stage reads: as asked, or as a follow-up was read."""
        return self.resolution.resolved if self.resolution is not None else self.asked

    @property
    def hits(self) -> list[Hit]:
        """The retrieved chunks, in the reader's order once the gates ran."""
        if self.gate is not None:
            return self.gate.hits
        return self.retrieved.hits if self.retrieved is not None else []

    @property
    def readings(self) -> tuple[str, ...]:
        """The questions offered back to a question with several readings."""
        return self.gate.refusal.readings if self.gate is not None and self.gate.refusal is not None else ()

    @property
    def retrieval_query(self) -> str:
        return self.retrieved.query if self.retrieved is not None else ""

    @property
    def query_vector(self) -> Any:
        return self.retrieved.vector if self.retrieved is not None else None

    @property
    def index_version(self) -> str:
        return self.retrieved.index_version if self.retrieved is not None else ""

    @property
    def verification(self) -> Verification | None:
        return self.verified.verification if self.verified is not None else None

    @property
    def risk(self) -> Risk | None:
        return self.verified.risk if self.verified is not None else None

    @property
    def route(self) -> Route:
        return self.verified.route if self.verified is not None else Route.REFUSE
