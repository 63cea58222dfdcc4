"""ExpertQA suite of the grounding benchmark: real LLM answers, judged claim by claim.

ExpertQA holds questions written by experts, answered by GPT-4 and Bing Chat based systems
that cite web pages, and an expert's verdict on every claim against the excerpt it cites. The
knowledge base is every answer's cited excerpts (one Markdown document each, titled from its
URL); each answer is replayed as written through the real openai client and the replay server,
its `[n]` markers turned into citations of the context that holds excerpt n (`{cite=TAG}` of
bench/grounding/replay_server.py). Measured per claim, by the expert's verdict:

- complete (fully supported) claims that reach the user, word for word;
- partial (Partial / Incomplete) claims kept out: no sentence of them reaches the user;
- uncited (Missing: no evidence) claims kept out.

Split by a hash of the question (bench.datasets.expertqa_split): train (half; the claim judge
may learn from it), dev and test (a quarter each); figures for dev and test.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from bench import datasets as ds
from bench.grounding.clapnq import contains_text, delivered, held
from bench.grounding.harness import Dump, PassResult, Row, SuiteResult, ask, ingest_kb, missing, run_pass, temp_app
from bench.grounding.replay_server import ReplayServer
from bot.app import App
from bot.config import Config
from core.messages import Decision
from core.text.normalize import clean_input
from core.text.sentences import split_sentences

NAME = "expertqa"
SPLITS = ("dev", "test")
LABELS = ("complete", "partial", "uncited")
_MARKER = re.compile(r"\[(\d+)\]")
_PIECE_WORDS = 3  # a piece of a claim shorter than this is not evidence that it reached the user
_WORD = re.compile(r"\w+")


def replay_answer(r: ds.ExpertRecord) -> str:
    """The answer as written, each `[n]` a `{cite=TAG}` of excerpt n of this record."""
    return _MARKER.sub(lambda m: "{cite=" + f"{r.index}:{m.group(1)}" + "}", r.answer.strip())


def sources(records: Sequence[ds.ExpertRecord]) -> dict[str, str]:
    """TAG -> excerpt text, for the replay server to find the context of each citation."""
    return {f"{r.index}:{n}": text for r in records for n, text in r.excerpts.items()}


def pieces(claim: str) -> list[str]:
    """The sentences and list items of a claim (markers removed) long enough to be recognised."""
    text = _MARKER.sub(" ", claim)
    parts = [p for s in split_sentences(text) for p in re.split(r"\s+-\s+", s)]
    return [p for p in parts if len(_WORD.findall(p)) >= _PIECE_WORDS]


def reached(answer: str, claim: str) -> bool:
    """The whole claim reached the user: every piece of it is in the answer sent."""
    parts = pieces(claim)
    return bool(parts) and all(contains_text(answer, p) for p in parts)


def leaked(answer: str, claim: str) -> bool:
    """Some sentence or list item of the claim reached the user."""
    return any(contains_text(answer, p) for p in pieces(claim))


def claim_outcomes(r: ds.ExpertRecord, d: Decision) -> list[dict[str, Any]]:
    """One entry per claim: its label, and whether all / some of it reached the user."""
    answer = d.answer if delivered(d) else ""
    return [{"text": c.text, "label": c.label, "support": c.support, "reached": reached(answer, c.text),
             "leaked": leaked(answer, c.text), "has_excerpt": bool(c.cites) and all(n in r.excerpts for n in c.cites)}
            for c in r.claims]


def _row(app: App, server: ReplayServer, doc_ids: dict[tuple[int, int], str]) -> Callable[[int, ds.ExpertRecord], Row]:
    def row(i: int, r: ds.ExpertRecord) -> Row:
        server.last = ""
        d = ask(app, NAME, "answers", r.index, r.question)
        docs = [doc_ids[(r.index, n)] for n in sorted(r.excerpts)]
        hits = {h.doc_id for h in getattr(app.pipeline.index, "last", [])}
        return Row(NAME, "answers", r.index, r.question, "reply", d, given_answer=server.last or None,
                   gold_doc=docs[0] if docs else "", split=r.split,
                   extra={"delivered": delivered(d), "held": held(d), "system": r.system,
                          "excerpts_retrieved": sum(doc in hits for doc in docs), "excerpts": len(docs),
                          "claims": claim_outcomes(r, d)})

    return row


def _rate(flags: Sequence[bool]) -> float:
    return round(sum(flags) / len(flags), 4) if flags else 0.0


def claim_metrics(rows: Sequence[Row], suffix: str) -> dict[str, float | int]:
    """Per-claim figures of some rows: complete delivered (all of them, and those whose cited
    excerpts are in the knowledge base), partial and uncited kept out, answers delivered."""
    claims = [c for r in rows for c in r.extra["claims"]]
    by = {label: [c for c in claims if c["label"] == label] for label in LABELS}
    verifiable = [c for c in by["complete"] if c["has_excerpt"]]
    return {
        f"complete_delivered{suffix}": _rate([c["reached"] for c in by["complete"]]),
        f"complete_with_excerpt_delivered{suffix}": _rate([c["reached"] for c in verifiable]),
        f"partial_kept_out{suffix}": _rate([not c["leaked"] for c in by["partial"]]),
        f"uncited_kept_out{suffix}": _rate([not c["leaked"] for c in by["uncited"]]),
        f"answers_delivered{suffix}": _rate([delivered(r.decision) for r in rows]),
        f"answers_held{suffix}": _rate([held(r.decision) for r in rows]),
        f"n_answers{suffix}": len(rows), f"n_complete{suffix}": len(by["complete"]),
        f"n_complete_with_excerpt{suffix}": len(verifiable), f"n_partial{suffix}": len(by["partial"]),
        f"n_uncited{suffix}": len(by["uncited"]),
    }


def _table(p: PassResult) -> list[str]:
    lines = ["| split | answers | delivered | held | complete delivered | complete (excerpt in KB) delivered "
             "| partial kept out | uncited kept out | refusal reasons |", "|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for split in SPLITS:
        rows = [r for r in p.rows if r.split == split]
        m = claim_metrics(rows, "")
        reasons = Counter(r.decision.refusal_reason for r in rows if r.decision.refused)
        lines.append(f"| {split} | {len(rows)} | {m['answers_delivered']:.3f} | {m['answers_held']:.3f} "
                     f"| {m['complete_delivered']:.3f} ({m['n_complete']}) "
                     f"| {m['complete_with_excerpt_delivered']:.3f} ({m['n_complete_with_excerpt']}) "
                     f"| {m['partial_kept_out']:.3f} ({m['n_partial']}) | {m['uncited_kept_out']:.3f} ({m['n_uncited']}) "
                     f"| {', '.join(f'{k} {v}' for k, v in reasons.most_common()) or '-'} |")
    return lines


def run_expertqa(path: Path, config: Config, *, embedder: Any = None, limit: int | None = None,
                 dump: Dump | None = None, splits: Sequence[str] = SPLITS) -> SuiteResult:
    """Replay the ExpertQA answers of the dev and test parts over a KB of every answer's excerpts."""
    if not path.is_file():
        return missing(NAME, path)
    t0 = time.perf_counter()
    result = SuiteResult(NAME)
    records = ds.load_expertqa(path)
    asked = [r for r in records if r.split in splits]
    asked = asked[:limit] if limit is not None else asked
    server = ReplayServer()
    server.sources = sources(records)
    for r in asked:  # the generator is asked the question as the pipeline cleaned it
        server.add(clean_input(r.question), answer=replay_answer(r))
    server.set_mode("answer")
    cfg = config.changed(generator__kind="openai", openai=replace(config.openai, base_url=server.base_url))
    result.notes.append(
        "generator=openai against bench/grounding/replay_server.py, each answer as its system wrote it, [n] cited as the "
        f"context holding excerpt n (else the best-overlapping context); split by question hash; {len(asked)} "
        f"answers asked ({', '.join(f'{s} {sum(r.split == s for r in asked)}' for s in splits)}), in file order")
    with server, temp_app(cfg, embedder=embedder, prefix=NAME) as app:
        kb = app.config.paths.data_dir.parent / NAME
        doc_ids = ds.write_expertqa_kb(records, kb)
        ingest_kb(app, kb, result)
        result.notes.append(f"KB = the cited excerpts of all {len(records)} answers ({len(doc_ids)} documents); "
                            f"{sum(not r.excerpts for r in records)} answers cite URLs only (no excerpt in the KB)")
        result.passes.append(run_pass(app, NAME, "answers", "reply", asked, _row(app, server, doc_ids), dump))
        result.notes.append(f"replay server: {server.requests} LLM requests, {server.misses} unknown questions")
    p = result.passes[0]
    result.metrics = {}
    for split in splits:
        result.metrics |= claim_metrics([r for r in p.rows if r.split == split], f"_{split}")
    result.tables = _table(p)
    result.seconds = time.perf_counter() - t0
    return result
