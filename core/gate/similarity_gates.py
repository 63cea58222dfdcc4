"""The similarity gates: how near the retrieved chunks are to the question, before any generator
runs (a failed gate means no LLM call at all). The measures are taken once (`Similarity`) and
each gate reads them; core/gate/gates.py runs these in a turn's gates, `run_gates` alone (as
`groundbot calibrate` sweeps them)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from core import reasons
from core.gate.chain import WARN, Gate, GateResult, Scores, Verdict, refuse, run_chain
from core.messages import Hit
from core.settings import GateSettings
from core.text.lexicon import content_terms


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


@dataclass(frozen=True)
class Similarity:
    """What the similarity gates read: the chunks' similarities to the question, measured once,
    and the thresholds they are held to."""

    found: int  # chunks retrieved
    top1: float
    mean: float  # of the `mean_top_n` best
    kept: list[Hit]  # chunks that survive the per-chunk floor, in the order they came
    chars: int  # characters of the kept chunks
    coverage: float  # share of the question's content words the kept chunks hold
    cfg: GateSettings

    def scores(self) -> Scores:
        return {"top1_similarity": round(self.top1, 4), "mean_confidence": round(self.mean, 4),
                "context_chunks": len(self.kept), "context_chars": self.chars, "keyword_coverage": round(self.coverage, 4)}


def measure(question: str, hits: Sequence[Hit], cfg: GateSettings) -> Similarity:
    """The similarity measures of `hits` for `question` (the retrieval query)."""
    ranked = sorted(hits, key=lambda h: h.similarity, reverse=True)
    top_n = ranked[: max(1, cfg.mean_top_n)]
    kept = [h for h in hits if h.similarity >= cfg.chunk_floor]
    return Similarity(found=len(ranked), top1=ranked[0].similarity if ranked else 0.0,
                      mean=sum(h.similarity for h in top_n) / len(top_n) if top_n else 0.0, kept=kept,
                      chars=sum(len(h.text) for h in kept), coverage=keyword_coverage(question, kept) if kept else 0.0,
                      cfg=cfg)


def has_matches(s: Similarity) -> Verdict | None:
    return None if s.found else refuse(reasons.NO_MATCHING_SOURCE)


def offtopic_floor(s: Similarity) -> Verdict | None:
    """Nothing in the knowledge base is even near the question."""
    return None if s.top1 >= s.cfg.offtopic_floor else refuse(reasons.OFF_TOPIC)


def top1_similarity(s: Similarity) -> Verdict | None:
    return None if s.top1 >= s.cfg.min_top1_similarity else refuse(reasons.NO_MATCHING_SOURCE)


def mean_confidence(s: Similarity) -> Verdict | None:
    return None if s.mean >= s.cfg.min_mean_confidence else refuse(reasons.LOW_CONFIDENCE)


def context_sufficiency(s: Similarity) -> Verdict | None:
    enough = len(s.kept) >= s.cfg.min_chunks and s.chars >= s.cfg.min_context_chars
    return None if enough else refuse(reasons.INSUFFICIENT_CONTEXT)


def covers_keywords(s: Similarity) -> Verdict | None:
    """The context holds too few of the question's words: a warning only (it weighs in the risk)."""
    return None if s.coverage >= s.cfg.min_keyword_coverage else WARN


SIMILARITY_GATES: tuple[Gate[Similarity], ...] = tuple(
    Gate(name, check, measures=Similarity.scores) for name, check in (
        ("has_matches", has_matches), ("offtopic_floor", offtopic_floor), ("top1_similarity", top1_similarity),
        ("mean_confidence", mean_confidence), ("context_sufficiency", context_sufficiency),
        ("keyword_coverage", covers_keywords)))


def run_gates(question: str, hits: Sequence[Hit], cfg: GateSettings) -> GateResult:
    """The similarity gates alone, in order; the first failing gate names the reason."""
    s = measure(question, hits, cfg)
    return replace(run_chain(SIMILARITY_GATES, s), kept=s.kept, hits=list(hits))
