"""The ordered Guardrails rules: what decides PASS, WARN or REFUSE for a whole answer.

Each rule has one shape: it reads the `Draft` (the answer's claims and citations, mapped and
checked lazily) and returns a `Verdict` or None when it passes. Unsupported claims, however
many, are left out of the answer (pruned) rather than refusing it: an answer is refused only
when no claim is supported, or when what is left is not about the question. The first REFUSE ends the
verification; WARN verdicts pile up and downgrade a PASS. The order is the order of
`RULES`, so a reader sees the policy in one list: the rules on the answer's citations, then
(once its claims are mapped to their evidence, which the record then carries) the rules on its claims.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property

from core import reasons
from core.messages import Hit
from core.ports import ClaimJudge
from core.reasons import Reason, Status
from core.settings import VerifySettings
from core.text.lexicon import content_terms
from core.text.sentences import Claim
from core.verify.claim_checks import CHECKS, AnswerContext, ClaimCheck, map_claim
from core.verify.model import default_model


@dataclass(frozen=True)
class Verdict:
    status: Status  # REFUSE or WARN
    reason: Reason
    uncovered: tuple[str, ...] = ()  # the claims a refusal found wanting, when it names them


@dataclass
class Draft:
    """One answer under verification; its claims are mapped and checked on first use."""

    question: str
    claims: list[Claim]
    hits: Sequence[Hit]
    cfg: VerifySettings
    judge: ClaimJudge | None = None
    judge_floor: float = 0.5
    cites: list[int] = field(init=False)
    invalid: list[int] = field(init=False)

    def __post_init__(self) -> None:
        self.cites = sorted({c for claim in self.claims for c in claim.citations})
        self.invalid = [c for c in self.cites if c < 1 or c > len(self.hits)]

    @property
    def valid(self) -> list[int]:
        return [c for c in self.cites if 1 <= c <= len(self.hits)]

    @property
    def citation_density(self) -> float:
        return round(sum(1 for c in self.claims if c.citations) / len(self.claims), 4) if self.claims else 0.0

    @cached_property
    def checks(self) -> list[ClaimCheck]:
        """Every claim mapped to its evidence, then run through CHECKS in order."""
        fallback = self.valid or list(range(1, len(self.hits) + 1))
        model = default_model()
        mapped = [map_claim(c, list(c.citations) or fallback, self.question, self.hits, self.cfg, model)
                  for c in self.claims]
        if self.cfg.require_citations:  # a claim that cites nothing is never delivered, however true
            for claim, row in zip(self.claims, mapped, strict=True):
                if not claim.citations:
                    row.fail(UNCITED)
        ctx = AnswerContext(self.question, mapped, self.hits, fallback, self.cfg, self.judge, self.judge_floor)
        for check in CHECKS:
            check(ctx)
        return mapped

    @property
    def uncovered(self) -> list[ClaimCheck]:
        return [c for c in self.checks if not c.supported]


Rule = Callable[[Draft], Verdict | None]
UNCITED = "cites no source"


def has_claims(d: Draft) -> Verdict | None:
    return None if d.claims else Verdict(Status.REFUSE, reasons.UNSUPPORTED_CLAIMS)


def has_citations(d: Draft) -> Verdict | None:
    return Verdict(Status.REFUSE, reasons.MISSING_CITATIONS) if not d.cites and d.cfg.require_citations else None


def citations_valid(d: Draft) -> Verdict | None:
    """Every cited number names a source; a refusal names the claims that cite one that does not."""
    if not d.invalid:
        return None
    wanting = tuple(c.text for c in d.claims if any(n in d.invalid for n in c.citations))
    return Verdict(Status.REFUSE, reasons.INVALID_CITATIONS, wanting)


def claim_mapping(d: Draft) -> Verdict | None:
    """At least one claim is supported by its evidence."""
    return None if len(d.uncovered) < len(d.checks) else Verdict(Status.REFUSE, reasons.UNSUPPORTED_CLAIMS)


def kept_claims_answer(d: Draft) -> Verdict | None:
    """What is left once unsupported claims are pruned must still be about the question: at
    least one kept claim shares a content word with it (or is a yes/no checked through it)."""
    if not d.uncovered:
        return None
    asked = set(content_terms(d.question))
    kept = [c for c in d.checks if c.supported]
    if not asked or any(c.polar or asked & set(content_terms(c.claim)) for c in kept):
        return None
    return Verdict(Status.REFUSE, reasons.UNSUPPORTED_CLAIMS)


def citation_density(d: Draft) -> Verdict | None:
    return Verdict(Status.WARN, reasons.MISSING_CITATIONS) if d.citation_density < d.cfg.min_citation_density else None


def all_claims_covered(d: Draft) -> Verdict | None:
    """Claims were left out: the answer goes out without them, and says so."""
    return Verdict(Status.WARN, reasons.UNSUPPORTED_CLAIMS) if d.uncovered else None


CITATION_RULES: tuple[Rule, ...] = (has_claims, has_citations, citations_valid)  # read the citations only
CLAIM_RULES: tuple[Rule, ...] = (claim_mapping, kept_claims_answer, citation_density, all_claims_covered)
RULES: tuple[Rule, ...] = CITATION_RULES + CLAIM_RULES
