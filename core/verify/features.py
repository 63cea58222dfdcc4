"""What an evidence passage says about one claim, as a few numbers.

Each feature compares the claim's content words with the evidence sentences, keeping
apart the words the claim adds (its *novel* terms) from the words it shares with the
question, because restating the question proves nothing. None of them looks at the
answer's length or style: a right answer restated as a full sentence keeps its novel
terms, and its question terms only count at half weight.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from core.text.lexicon import content_terms
from core.text.names import fold
from core.text.normalize import normalize_text, words

NEGATIONS = frozenset(["not", "no", "never", "none", "neither", "nor", "cannot", "without", "nobody", "nothing", "نه", "نمی", "نیست", "هیچ"])
FEATURES = ("sup1", "sup2", "supall", "nov_all", "nov1", "cooc1", "cooc2", "qcov", "neg_mis", "crit_miss", "no_novel")


@dataclass(frozen=True)
class Sentence:
    """One evidence sentence with its pre-computed terms."""

    chunk: int  # 1-based [C#] number
    text: str
    terms: frozenset[str]
    tokens: frozenset[str]  # folded word tokens, for numbers and names
    negated: bool


_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_PARTS = re.compile(r"[-'’/_.]")


@lru_cache(maxsize=8192)
def make_sentence(chunk: int, text: str) -> Sentence:
    """Cached (a Sentence is immutable): every claim of an answer reads the sentences of the chunks it
    cites, so one turn would otherwise build the same sentence once per claim."""
    norm = normalize_text(text)
    toks = words(norm)
    tokens = {fold(t) for t in toks} | set(_NUMBER.findall(norm))
    return Sentence(chunk, text, frozenset(content_terms(norm, normalized=True)), frozenset(tokens),
                    bool(NEGATIONS.intersection(toks)))


def present(token: str, tokens: set[str]) -> bool:
    """A number or name is present as a whole token, or as all of its hyphenated parts (KMJ-TV;
    an identifier's underscores split it too, and one at its edge is no part of the name)."""
    t = fold(token)
    if t in tokens:
        return True
    parts = [p for p in _PARTS.split(t) if p]
    return bool(parts) and parts != [t] and all(p in tokens for p in parts)


@dataclass
class ClaimEvidence:
    features: dict[str, float]
    window: list[int]  # indices of the evidence sentences that best support the claim
    missing: list[str]  # numbers and names of the claim absent from the evidence


def _weighted(target: set[str], novel: set[str], have: frozenset[str] | set[str]) -> float:
    total = sum(1.0 if t in novel else 0.5 for t in target)
    if not total:
        return 1.0
    return sum(1.0 if t in novel else 0.5 for t in target if t in have) / total


def _recall(terms: set[str], have: frozenset[str] | set[str]) -> float:
    return len(terms & have) / len(terms) if terms else 1.0


def claim_evidence(claim: str, question: str, sentences: Sequence[Sentence], short_words: int,
                   critical: Sequence[str]) -> ClaimEvidence:
    """Features of one claim against its evidence sentences (cited chunks only)."""
    ct = set(content_terms(claim))
    qt = set(content_terms(question))
    short = len(claim.split()) <= short_words
    target = ct | qt if short else set(ct)
    novel = ct - qt
    everything: set[str] = set().union(*(s.terms for s in sentences)) if sentences else set()
    all_tokens: set[str] = set().union(*(s.tokens for s in sentences)) if sentences else set()
    windows: list[list[int]] = [[i] for i in range(len(sentences))]
    windows += [[i, i + 1] for i in range(len(sentences) - 1) if sentences[i].chunk == sentences[i + 1].chunk]
    sup1 = sup2 = nov1 = cooc1 = cooc2 = 0.0
    best_window: list[int] = []
    best_key: tuple[float, ...] = (-1.0, -1.0, -1.0)
    for w in windows:
        have = sentences[w[0]].terms if len(w) == 1 else sentences[w[0]].terms | sentences[w[1]].terms
        sup = _weighted(target, novel, have)
        nov = _recall(novel, have) if novel else _recall(qt, have)
        cooc = nov * (_recall(qt, have) if novel else 1.0)
        if len(w) == 1:
            sup1, nov1, cooc1 = max(sup1, sup), max(nov1, nov), max(cooc1, cooc)
        sup2, cooc2 = max(sup2, sup), max(cooc2, cooc)
        key = (round(sup, 6), -len(w), cooc)
        if key > best_key:
            best_key, best_window = key, w
    claim_tokens = set(words(normalize_text(claim)))
    negated_claim = bool(NEGATIONS & claim_tokens)
    negated_evidence = any(sentences[i].negated for i in best_window)
    qnorm = normalize_text(question)
    asked = {fold(t) for t in words(qnorm)} | set(_NUMBER.findall(qnorm))
    # names and numbers the question itself brings are its premise; the ones the claim adds must be in evidence
    missing = [t for t in critical if not present(t, all_tokens) and not present(t, asked)]
    feats = {
        "sup1": sup1,
        "sup2": sup2,
        "supall": _weighted(target, novel, everything),
        "nov_all": _recall(novel, everything) if novel else 1.0,
        "nov1": nov1,
        "cooc1": cooc1,
        "cooc2": cooc2,
        "qcov": _recall(qt, everything),
        "neg_mis": 1.0 if negated_claim and not negated_evidence else 0.0,
        "crit_miss": float(min(len(missing), 3)),
        "no_novel": 0.0 if novel else 1.0,
    }
    return ClaimEvidence(feats, best_window, missing)
