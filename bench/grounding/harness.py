"""Shared machinery of the grounding benchmark: a temporary App, asking one question the
way a chat message is asked, and the per-question rows and per-pass tallies."""

from __future__ import annotations

import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from bot.app import App, build_app
from bot.config import Config
from core.messages import ConversationKey, Decision, Hit, Incoming
from core.text.citations import rewrite
from core.text.normalize import normalize_text

Dump = Callable[[dict[str, Any]], None]


class RecordingIndex:
    """Wraps the chunk index and remembers what the pipeline's last search returned.

    Behaviour is unchanged (every call is delegated); it only lets the benchmark see the
    retrieved chunks, which `Decision.sources` does not list unless they were cited.
    """

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.last: list[Hit] = []
        self.taken = False  # the turn's search is recorded; set back by `ask`

    def search(self, query_text: str, query_vector: np.ndarray, k: int, scope: str | None = None) -> list[Hit]:
        hits = list(self.inner.search(query_text, query_vector, k, scope=scope))
        if not self.taken:  # the turn's own search, not a refusal's check of its suggestions
            self.last, self.taken = hits, True
        return hits

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


@contextmanager
def temp_app(config: Config, *, embedder: Any = None, prefix: str = "bench") -> Iterator[App]:
    """A real App in a fresh temporary data dir (removed afterwards), with a RecordingIndex."""
    with tempfile.TemporaryDirectory(prefix=f"groundbot-{prefix}-") as tmp:
        app = build_app(config.changed(paths__data_dir=Path(tmp) / "data"), embedder=embedder)
        app.pipeline.retrieval.index = RecordingIndex(app.pipeline.retrieval.index)  # type: ignore[assignment]
        try:
            yield app
        finally:
            engine = getattr(app.store, "engine", None)
            if engine is not None:
                engine.dispose()


def retrieved(app: App) -> list[Hit]:
    idx = app.pipeline.index
    return list(idx.last) if isinstance(idx, RecordingIndex) else []


def search_direct(app: App, question: str, k: int) -> list[Hit]:
    """The index's top-k for a question, outside the pipeline (used when top_k < k)."""
    q = normalize_text(question)
    return app.index.search(q, app.embedder.embed_queries([q])[0], k)


def ask(app: App, suite: str, tag: str, i: int, text: str) -> Decision:
    """Ask one question as a chat message, in a conversation of its own (no history leaks)."""
    idx = app.pipeline.index
    if isinstance(idx, RecordingIndex):
        idx.last, idx.taken = [], False
    key = ConversationKey("bench", f"{suite}:{tag}:{i}")
    return app.ask(Incoming(key, "bench-user", text))


def norm_answer(text: str) -> str:
    """Case- and whitespace-folded text without [C#] markers, for gold-answer containment."""
    return normalize_text(rewrite(text, lambda m: " "))


def contains_gold(reply: str, gold: Sequence[str]) -> bool:
    r = norm_answer(reply)
    return any(g and norm_answer(g) in r for g in gold)


def gold_rank(hits: Sequence[Hit], doc_id: str) -> int | None:
    """0-based rank of the first retrieved chunk of `doc_id` (None if absent)."""
    for i, h in enumerate(hits):
        if h.doc_id == doc_id:
            return i
    return None


def best_other(hits: Sequence[Hit], doc_id: str) -> float | None:
    """Highest similarity among retrieved chunks of other documents: roughly the top-1 the
    question would get if its gold document were not in the KB."""
    others = [h.similarity for h in hits if h.doc_id != doc_id]
    return round(max(others), 4) if others else None


def refusal_stage(d: Decision) -> str:
    """Where a refused turn stopped: input, gate, generator or verifier ('' if replied)."""
    if not d.refused:
        return ""
    if d.scores.get("total_claims") is not None:
        return "verifier"
    if d.refusal_reason == "INPUT_REJECTED":
        return "input"
    if any(not c.endswith("(warn)") for c in d.checks_failed):
        return "gate"
    return "generator"


@dataclass
class Row:
    """One question's outcome (one JSONL line of --dump)."""

    suite: str
    pass_name: str
    index: int
    question: str
    expected: str  # "reply" or "refuse"
    decision: Decision
    given_answer: str | None = None  # what the replay LLM returned
    gold: tuple[str, ...] = ()
    gold_doc: str = ""
    gold_rank: int | None = None
    best_other_similarity: float | None = None  # best retrieved chunk not from the gold document
    split: str = ""  # the record's split ("dev" / "test") where the suite has one
    extra: dict[str, Any] = field(default_factory=dict)  # suite-specific fields of the dump row

    @property
    def replied(self) -> bool:
        return not self.decision.refused

    @property
    def correct(self) -> bool:
        return self.replied == (self.expected == "reply")

    @property
    def with_gold(self) -> bool:
        return self.replied and contains_gold(self.decision.answer, self.gold)

    def to_json(self) -> dict[str, Any]:
        d = self.decision
        record = d.to_dict()
        return {
            "suite": self.suite, "pass": self.pass_name, "index": self.index, "question": self.question,
            "given_answer": self.given_answer, "reply": d.answer, "expected": self.expected,
            "refused": d.refused, "correct": self.correct, "refusal_reason": d.refusal_reason,
            "stage": refusal_stage(d), "status": d.status, "reasons": d.reasons, "checks_failed": d.checks_failed,
            "llm_called": d.llm_called, "scores": d.scores, "claim_map": record["claim_map"], "gold": list(self.gold),
            "gold_doc": self.gold_doc, "gold_rank": self.gold_rank, "with_gold": self.with_gold if self.gold else None,
            "best_other_similarity": self.best_other_similarity,
            "sources": record["sources"],
            "route": d.route, "risk": d.risk, "risk_parts": d.risk_parts,
            **({"split": self.split} if self.split else {}), **self.extra,
        }


@dataclass
class PassResult:
    """All rows of one pass (one group of questions with one expected outcome)."""

    name: str
    expected: str
    rows: list[Row] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def n(self) -> int:
        return len(self.rows)

    @property
    def replied(self) -> int:
        return sum(r.replied for r in self.rows)

    @property
    def refused(self) -> int:
        return self.n - self.replied

    def rate(self, pred: Callable[[Row], bool]) -> float:
        return round(sum(pred(r) for r in self.rows) / self.n, 4) if self.n else 0.0

    def reasons(self) -> Counter[str]:
        return Counter(r.decision.refusal_reason for r in self.rows if r.decision.refused)

    def stages(self) -> Counter[str]:
        return Counter(refusal_stage(r.decision) for r in self.rows if r.decision.refused)

    def top1(self) -> list[float]:
        return [float(v) for r in self.rows if (v := r.decision.scores.get("top1_similarity")) is not None]


@dataclass
class SuiteResult:
    name: str
    metrics: dict[str, float | int] = field(default_factory=dict)
    passes: list[PassResult] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    ingest_seconds: float = 0.0
    seconds: float = 0.0
    skipped: str = ""
    tables: list[str] = field(default_factory=list)  # Markdown lines shown instead of the "other figures" line
    curves: dict[str, Any] = field(default_factory=dict)  # trade-off curves by part (the real suite's, by project)


def quantiles(values: Sequence[float], qs: Sequence[float] = (0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0)) -> dict[str, float]:
    """Named quantiles (p0 = min ... p100 = max) of a list of scores; empty when no values."""
    if not values:
        return {}
    arr = np.asarray(values, dtype=float)
    return {f"p{round(q * 100)}": round(float(np.quantile(arr, q)), 4) for q in qs}


def histogram(values: Sequence[float], step: float = 0.05) -> list[tuple[float, int]]:
    """(bin start, count) over [floor(min), max] in `step`-wide bins."""
    if not values:
        return []
    lo = np.floor(min(values) / step) * step
    bins = int(np.floor((max(values) - lo) / step)) + 1
    counts = [0] * bins
    for v in values:
        counts[min(bins - 1, int((v - lo) // step))] += 1
    return [(round(lo + i * step, 2), c) for i, c in enumerate(counts)]


# -- running a pass -------------------------------------------------------------------------

def _progress(suite: str, tag: str, done: int, total: int) -> None:
    if done == total or done % 200 == 0:
        print(f"  [{suite}/{tag}] {done}/{total}", file=sys.stderr, flush=True)


def run_pass(app: App, suite: str, tag: str, expected: str, items: Sequence[Any],
             make_row: Callable[[int, Any], Row], dump: Dump | None) -> PassResult:
    """Ask every item (make_row asks and builds the row); returns the tallied pass."""
    result = PassResult(tag, expected)
    t0 = time.perf_counter()
    for i, item in enumerate(items):
        row = make_row(i, item)
        result.rows.append(row)
        if dump:
            dump(row.to_json())
        _progress(suite, tag, i + 1, len(items))
    result.seconds = time.perf_counter() - t0
    return result


def ingest_kb(app: App, folder: Path, result: SuiteResult) -> None:
    """Ingest a KB folder into the suite's app, noting how much and how long."""
    t0 = time.perf_counter()
    summary = app.ingest([folder])
    result.ingest_seconds = time.perf_counter() - t0
    result.notes.append(f"ingested {len(summary.added)} documents, {summary.chunks_written} chunks "
                        f"in {result.ingest_seconds:.1f}s")


def rank_of(app: App, question: str, doc_id: str, k: int = 5) -> int | None:
    """0-based rank of `doc_id` among the last turn's retrieved chunks (a direct top-k search when top_k < k)."""
    hits = retrieved(app) if app.config.core.retrieval.top_k >= k else search_direct(app, question, k)
    return gold_rank(hits[:k], doc_id)


def recall(rows: Sequence[Row], suffix: str = "") -> dict[str, float]:
    """recall_at_1 / recall_at_5 of the gold documents of `rows` (those with one)."""
    ranks = [r.gold_rank for r in rows if r.gold_doc]
    if not ranks:
        return {}
    return {f"recall_at_1{suffix}": round(sum(x == 0 for x in ranks if x is not None) / len(ranks), 4),
            f"recall_at_5{suffix}": round(sum(x is not None and x < 5 for x in ranks) / len(ranks), 4)}


def missing(name: str, path: Path) -> SuiteResult:
    return SuiteResult(name, skipped=f"dataset file not found: {path} (see ../shared/datasets/README.md)")
