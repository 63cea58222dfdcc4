"""How risky is it to send an answer the verifier let through, and where does it go?

The risk score (0..1) is a weighted mean of parts the turn already measured, each 0..1, so a
reviewer sees why: uncovered claims, how far the weakest supported claim clears the support
threshold, claims resting on numbers and names, the generator's own doubt, the keyword-coverage
warning, a WARN verdict, and the claim judge's doubt about the weakest claim of a generated
answer. Parts a turn has no measure for (no generation confidence from the extractive generator
without the judge; no claim judge for an extractive quote) are left out and the mean is taken
over the rest.

Below `review.template_risk` the answer is sent; between the thresholds it is replaced by the
cited evidence quoted verbatim (`template_answer`); at or above `review.hold_risk` it waits
for a person (NEEDS_REVIEW).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from core.catalogue import say
from core.gate.chain import GateResult
from core.messages import ClaimRecord, Generation, Hit, Verification
from core.reasons import Route, Status
from core.settings import ReviewSettings, VerifySettings
from core.text.citations import marker
from core.text.names import critical_tokens

# how much each part counts; the score is the weighted mean over the parts a turn has. The claim
# judge's weight and hold_risk were chosen on dev records of long-form answers (CLAPNQ) and
# HaluEval's three forms (`python -m bench.tuning.routing_clapnq ROWS --choose`,
# bench/results/routing_choice.json): it doubts wordings it never saw in training, so it weighs
# as much as the other parts together, not twice
WEIGHTS: dict[str, float] = {
    "uncovered_claims": 0.30,
    "support_margin": 0.20,
    "numbers_and_names": 0.10,
    "generation_doubt": 0.15,
    "keyword_coverage_warning": 0.10,
    "warn_status": 0.15,
    "judge_doubt": 1.0,
}


@dataclass(frozen=True)
class Risk:
    score: float
    parts: dict[str, float] = field(default_factory=dict)


def _margin(claims: Sequence[ClaimRecord], floor: float) -> float:
    """1 when the weakest supported claim sits on the support threshold, 0 when it is certain."""
    supported = [c.support for c in claims if c.supported]
    if not supported:
        return 1.0
    room = max(1e-9, 1.0 - floor)
    return min(1.0, max(0.0, 1.0 - (min(supported) - floor) / room))


def _doubt(gen: Generation | None) -> float | None:
    """The generator's doubt: 1 - the LLM's confidence (logprobs); none for a quote, which has no
    confidence, and 0 for a stored FAQ answer, written by a person."""
    if gen is None:
        return None
    if gen.faq:
        return 0.0
    return None if gen.confidence is None else min(1.0, max(0.0, 1.0 - gen.confidence))


def _judge_doubt(claims: Sequence[ClaimRecord]) -> float | None:
    """1 - the claim judge's probability for the weakest judged claim; None when no claim was
    judged (an extractive quote, or the judge switched off)."""
    judged = [c.judge for c in claims if c.judge is not None]
    return None if not judged else min(1.0, max(0.0, 1.0 - min(judged)))


def score_of(parts: dict[str, float], weights: dict[str, float] | None = None) -> float:
    """The weighted mean of the parts a turn has (bench.tuning.routing re-weighs recorded parts with it)."""
    w = WEIGHTS if weights is None else weights
    total = sum(w.get(k, 0.0) for k in parts)
    return round(sum(w.get(k, 0.0) * v for k, v in parts.items()) / total, 4) if total > 0 else 0.0


def assess(verification: Verification, gate: GateResult | None, generation: Generation | None,
           claims: Sequence[ClaimRecord], cfg: VerifySettings) -> Risk:
    """The risk of sending this verified answer, with its parts. A pruned answer is judged by
    the claims it still holds (the share left out is a part of its own); with the claim judge,
    the judge's doubt replaces the word-overlap support margin, which a faithful paraphrase
    fails by design."""
    total = max(1, len(claims) or verification.total_claims)
    sent = [c for c in claims if c.supported] if verification.removed_claims else list(claims)
    judged = any(c.judge is not None for c in sent)
    parts: dict[str, float] = {
        "uncovered_claims": min(1.0, len(verification.uncovered_claims) / total),
        "numbers_and_names": sum(1 for c in sent if critical_tokens(c.claim)) / len(sent) if sent else 0.0,
        "keyword_coverage_warning": 1.0 if gate is not None and "keyword_coverage" in gate.warnings else 0.0,
        "warn_status": 1.0 if verification.status == Status.WARN and not verification.removed_claims else 0.0,
    }
    if not judged:
        parts["support_margin"] = _margin(sent, cfg.min_claim_support)
    for name, value in (("generation_doubt", _doubt(generation)), ("judge_doubt", _judge_doubt(sent))):
        if value is not None:
            parts[name] = value
    parts = {k: round(v, 4) for k, v in parts.items()}
    return Risk(score_of(parts), parts)


def route(score: float, cfg: ReviewSettings) -> Route:
    if score >= cfg.hold_risk:
        return Route.HOLD
    if score >= cfg.template_risk:
        return Route.TEMPLATE
    return Route.REPLY


def _chunk_of(sentence: str, chunks: Sequence[int], hits: Sequence[Hit]) -> int | None:
    for n in chunks:
        if 1 <= n <= len(hits) and (sentence in hits[n - 1].text or sentence == hits[n - 1].heading):
            return n
    return None


def template_answer(claims: Sequence[ClaimRecord], hits: Sequence[Hit], language: str) -> str:
    """The safer answer: the evidence sentences of the supported claims, quoted verbatim and
    marked as quotes, each citing its chunk ([C#], so the sources list stays right)."""
    quotes: list[tuple[str, int]] = []
    for claim in claims:
        if not claim.supported:
            continue
        for sentence in claim.evidence:
            n = _chunk_of(sentence, claim.evidence_chunks or claim.citations, hits)
            if n is not None and all(sentence != q for q, _ in quotes):
                quotes.append((sentence, n))
    if not quotes:
        return ""
    lines = [say("template_header", language)]
    lines.extend(f"> “{q}” {marker(n)}" for q, n in quotes)
    return "\n".join(lines)
