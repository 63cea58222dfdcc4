"""Resolution figures of the conversations suite: does the reading of a follow-up add to a question
the words a person adds when rewriting it into a standalone question, and leave alone the
questions that need nothing?

Data (bench/rewrites.py): CANARD's dev set (QuAC follow-ups with human rewrites; the earlier turns
are the article and section titles, then questions and answers) and MTRAG's human rewrites (the
earlier user questions only), the dev and test conversations only: the term selector was trained
on the others. For each follow-up (a question after an earlier question): the stemmed content
words the human rewrite adds to the question against the words the reading adds; precision,
recall and F1 micro-averaged over the follow-ups. Left alone: of the questions with earlier turns
whose rewrite is the question itself, the share whose reading adds no content word.

Readings: the condensing groundbot shipped before any resolver (`core/retrieve/condense.py` at
583e54f, copied here as `condense`: the earlier questions glued in front of a question its word
list takes for a follow-up), as the baseline; and the shipped reading, `core.retrieve.resolve`
with the term selector (models/term_selector.py). Also: the share of the human rewrites
that `well_formed` takes for a question a person wrote (it must not turn such questions away).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench.grounding.harness import SuiteResult
from bench.rewrites import (
    CANARD_FILE,
    MTRAG_COLLECTIONS,
    MTRAG_REWRITES_DIR,
    Rewrite,
    load_canard,
    load_mtrag_rewrites,
    prior_turns,
)
from core.retrieve.resolve import earlier, resolve, well_formed
from core.text.lexicon import content_terms
from core.text.normalize import normalize_text, words

Prior = Sequence[tuple[str, str]]
ItemResolver = Callable[[Rewrite], str]


def added_terms(text: str, question: str) -> frozenset[str]:
    """The content words (stemmed, lower-cased) `text` has that `question` has not."""
    return frozenset(content_terms(text)) - frozenset(content_terms(question))


def score(items: Sequence[Rewrite], outputs: Sequence[str]) -> dict[str, float | int]:
    """Added-word precision / recall / F1 over the follow-ups (micro-averaged), and the share left
    alone (adding no word) of the questions with earlier turns whose rewrite is the question itself."""
    tp = predicted = gold = 0
    alone = unchanged = n = 0
    for item, out in zip(items, outputs, strict=True):
        if not item.prior:
            continue
        mine, theirs = added_terms(out, item.question), added_terms(item.rewrite, item.question)
        if item.follow_up:
            n += 1
            tp += len(mine & theirs)
            predicted += len(mine)
            gold += len(theirs)
        if item.unchanged:
            unchanged += 1
            alone += not mine
    p = tp / predicted if predicted else 0.0
    r = tp / gold if gold else 0.0
    f1 = 2 * p * r / (p + r) if p + r else 0.0
    return {"precision": round(p, 4), "recall": round(r, 4), "f1": round(f1, 4), "n": n,
            "left_alone": round(alone / unchanged, 4) if unchanged else 0.0, "left_alone_right": alone,
            "left_alone_n": unchanged}


# -- the baseline: core/retrieve/condense.py as shipped at 583e54f (since replaced by the resolver) --
_ANAPHORA = frozenset(["it", "its", "this", "that", "these", "those", "they", "them", "their", "there", "he", "she",
                       "his", "her", "same", "above", "او", "آن", "این", "آنها", "اینها", "همین", "همان"])
_LEADS = ("and ", "also ", "what about ", "how about ", "and?", "و ", "پس ")


def condense(question: str, history: Prior, turns: int) -> str:
    """The question, prefixed by the last `turns` earlier questions when it reads as a follow-up
    (a pronoun of _ANAPHORA, or one of _LEADS first)."""
    norm = normalize_text(question)
    follow = bool(words(norm)) and (bool(_ANAPHORA & set(words(norm))) or norm.startswith(_LEADS))
    if not history or turns <= 0 or not follow:
        return question
    return " ".join([*(q for q, _ in history[-turns:] if q.strip()), question])


def selector_resolver(selector: Any, turns: int, threshold: float) -> ItemResolver:
    """The shipped reading (core.retrieve.resolve with the term selector): the question with the
    earlier words it picks, read from the earlier turns as the pipeline lays them out."""
    return lambda item: resolve(item.question, earlier(prior_turns(item), None, turns), selector, threshold).resolved


def run_resolver(resolver: ItemResolver, items: Sequence[Rewrite]) -> tuple[list[str], list[float]]:
    """Each item's resolved text and the milliseconds it took."""
    outs: list[str] = []
    ms: list[float] = []
    for item in items:
        t0 = time.perf_counter()
        outs.append(resolver(item))
        ms.append(1000 * (time.perf_counter() - t0))
    return outs, ms


def run_resolution(result: SuiteResult, *, canard: Path | None = None, rewrites: Path | None = None,
                   limit: int | None = None, turns: int = 2, threshold: float = 0.5, selector: Any = None) -> None:
    """Add the resolution figures of CANARD and MTRAG's rewrites to `result`, dev and test apart
    (the term selector trained on the rest: bench/rewrites.py `split_of`), skipping, with a note,
    what is missing; and how many human rewrites `well_formed` takes for questions a person wrote."""
    canard = CANARD_FILE if canard is None else canard
    rewrites = MTRAG_REWRITES_DIR if rewrites is None else rewrites
    if selector is None:
        try:
            from models.term_selector import OnnxTermSelector

            selector = OnnxTermSelector()
        except FileNotFoundError as exc:
            result.notes.append(f"term selector skipped: {exc}")
    data: list[tuple[str, list[Rewrite]]] = []
    if canard.is_file():
        data.append(("canard", load_canard(canard)))
    else:
        result.notes.append(f"CANARD skipped: {canard} not found")
    if (rewrites / f"{MTRAG_COLLECTIONS[0]}_lastturn.jsonl").is_file():
        data.append(("mtrag_rewrites", load_mtrag_rewrites(rewrites)))
    else:
        result.notes.append(f"MTRAG rewrites skipped: {rewrites} not found")
    m = result.metrics
    for name, every in data:
        held = [i for i in every if i.split != "train"]
        held = held[:limit] if limit is not None else held
        resolvers: list[tuple[str, ItemResolver]] = [("condense", lambda i: condense(i.question, i.prior, turns))]
        if selector is not None:
            resolvers.append(("selector", selector_resolver(selector, turns, threshold)))
        for who, fn in resolvers:
            outs, ms = run_resolver(fn, held)
            for split in ("dev", "test"):
                part = [(i, o) for i, o in zip(held, outs, strict=True) if i.split == split]
                for k, v in score([i for i, _ in part], [o for _, o in part]).items():
                    m[f"{name}_{who}_{k}_{split}"] = v
            if who == "selector" and ms:
                m[f"{name}_selector_ms_p50"] = round(float(np.median(ms)), 3)
        rewritten = [i.rewrite for i in held if i.follow_up]
        m[f"{name}_human_rewrites_well_formed"] = round(sum(bool(well_formed(r)) for r in rewritten) / max(1, len(rewritten)), 4)
        m[f"{name}_human_rewrites_well_formed_n"] = len(rewritten)
        result.notes.append(f"{name}: {len(held)} questions of the dev and test conversations "
                            f"({sum(i.follow_up for i in held)} follow-ups), the rest trained the term selector; "
                            f"turns read: history_turns={turns}, threshold {threshold}")
