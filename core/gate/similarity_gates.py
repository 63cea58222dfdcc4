"""Gates that run before any generator: a failed gate means no LLM call at all."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from core import reasons
from core.messages import Hit
from core.settings import GateSettings
from core.text.lexicon import content_terms


@dataclass
class GateResult:
    passed: bool
    reason: str  # first failing reason code, "" when passed
    kept: list[Hit]  # chunks that survive the per-chunk floor, best first
    scores: dict[str, float | int | None] = field(default_factory=dict)
    checks_passed: list[str] = field(default_factory=list)
    checks_failed: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def keyword_coverage(question: str, hits: Sequence[Hit]) -> float:
    """Share of the question's content words found in the given chunks."""
    terms = set(content_terms(question))
    if not terms:
        return 1.0
    context: set[str] = set()
    for h in hits:
        context.update(content_terms(h.text))
        context.update(content_terms(h.heading))
    return len(terms & context) / len(terms)


def run_gates(question: str, hits: Sequence[Hit], cfg: GateSettings) -> GateResult:
    """Evaluate the gates in order; the first failing gate names the reason."""
    ranked = sorted(hits, key=lambda h: h.similarity, reverse=True)
    top1 = ranked[0].similarity if ranked else 0.0
    top_n = ranked[: max(1, cfg.mean_top_n)]
    mean = sum(h.similarity for h in top_n) / len(top_n) if top_n else 0.0
    kept = [h for h in hits if h.similarity >= cfg.chunk_floor]
    chars = sum(len(h.text) for h in kept)
    coverage = keyword_coverage(question, kept) if kept else 0.0
    result = GateResult(
        passed=False,
        reason="",
        kept=kept,
        scores={
            "top1_similarity": round(top1, 4),
            "mean_confidence": round(mean, 4),
            "context_chunks": len(kept),
            "context_chars": chars,
            "keyword_coverage": round(coverage, 4),
        },
    )
    checks: list[tuple[str, bool, str]] = [
        ("has_matches", bool(ranked), reasons.NO_MATCHING_SOURCE),
        ("offtopic_floor", top1 >= cfg.offtopic_floor, reasons.OFF_TOPIC),
        ("top1_similarity", top1 >= cfg.min_top1_similarity, reasons.NO_MATCHING_SOURCE),
        ("mean_confidence", mean >= cfg.min_mean_confidence, reasons.LOW_CONFIDENCE),
        (
            "context_sufficiency",
            len(kept) >= cfg.min_chunks and chars >= cfg.min_context_chars,
            reasons.INSUFFICIENT_CONTEXT,
        ),
    ]
    for name, ok, code in checks:
        if ok:
            result.checks_passed.append(name)
        else:
            result.checks_failed.append(name)
            result.reason = code
            return result
    if coverage < cfg.min_keyword_coverage:
        result.warnings.append("keyword_coverage")
        result.checks_failed.append("keyword_coverage(warn)")
    else:
        result.checks_passed.append("keyword_coverage")
    result.passed = True
    return result
