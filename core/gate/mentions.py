"""A yes/no question about something the knowledge base never mentions is not answered from it.

"Can groundbot send emails to users?" shares "groundbot", "send" and "users" with passages about
the refusal message, and the passage reader, which reads how a passage answers the question's
topic, says one answers. But no document says "email": whether groundbot sends them is not
something its sources can settle, and a quote about something else reads as a yes. So before the
extractive generator quotes an answer to a yes/no question, each of the question's content words
that no retrieved chunk holds is looked up in the whole index (its full-text matching: stems,
folded accents, a long word spelt a letter apart); one that no chunk holds at all refuses it with
NOT_ANSWERED_BY_SOURCES, naming the word. A paraphrase in the knowledge base's own words passes
("Is the refusal text configurable?": "configuration" shares the stem). Any other question is
worded in the asker's own words and is held to them only when it is weak on both other counts:
the reader answers it below `[reader] unknown_word_probability` and retrieval placed it below
`unknown_word_similarity` (an off-topic question wrapped in an instruction about refusing, which
pulls retrieval toward the docs about refusals). A language model's answer is not held to this:
its claims are checked one by one.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Protocol

from cachetools import LRUCache

from core.messages import Hit
from core.ports import ChunkIndex
from core.text.lexicon import AUXILIARIES, STOP, content_terms
from core.text.normalize import normalize_text, words

log = logging.getLogger(__name__)
MIN_LETTERS = 3  # shorter words ("re" of "re-ingested", "AI") say too little to refuse on
MAX_LOOKUPS = 4  # words looked up in the index per question (each an index query): a long pasted "question" costs no more


class WordIndex(Protocol):
    def unmentioned(self, words: Sequence[str], scope: str | None = None) -> list[str]: ...


class KnownWords:
    """The index's answers remembered per index version and scope: a word is looked up once per
    version (the same words recur from question to question), the `limit` most recent kept."""

    def __init__(self, index: ChunkIndex, limit: int = 65536) -> None:
        self.index = index
        self.held: LRUCache[tuple[str, str | None, str], bool] = LRUCache(maxsize=limit)

    def unmentioned(self, words: Sequence[str], scope: str | None = None) -> list[str]:
        version = self.index.version()
        known = {w: self.held.get((version, scope, w)) for w in words}
        todo = [w for w, held in known.items() if held is None]
        if todo:
            absent = set(self.index.unmentioned(todo, scope))
            for w in todo:
                known[w] = self.held[(version, scope, w)] = w not in absent
        return [w for w in words if not known[w]]


def is_polar(question: str) -> bool:
    """A yes/no question: one opening with an auxiliary ("Can ...", "Does ...")."""
    ws = words(normalize_text(question))
    return bool(ws) and ws[0] in AUXILIARIES


def asked_words(question: str, polar_only: bool = True) -> list[str]:
    """The content words of a yes/no question (or, `polar_only` False, of any question), numbers
    left out (a version or a count says nothing of what is asked); [] for any other question. The
    words either side of an "or" are left out: a choice's alternatives are the asker's words, and
    the sources need say only one of them, maybe otherwise ("faster or slower": "more quickly")."""
    ws = words(normalize_text(question))
    if not ws or (polar_only and ws[0] not in AUXILIARIES):
        return []
    choices = {ws[i + d] for i, w in enumerate(ws) if w == "or" for d in (-1, 1) if 0 <= i + d < len(ws)}
    return [w for w in dict.fromkeys(ws)
            if w not in STOP and w not in choices and len(w) >= MIN_LETTERS and not w.isdigit()]


def unmentioned(question: str, hits: Sequence[Hit], index: WordIndex, scope: str | None = None,
                polar_only: bool = True) -> list[str]:
    """The words of a yes/no question (`polar_only`; else of any question) that no chunk of the
    knowledge base (of `scope`) holds: first those the retrieved chunks do not hold (no lookup),
    then the first `MAX_LOOKUPS` of them, each in the index."""
    wanted = asked_words(question, polar_only)
    if not wanted:
        return []
    held = {t for h in hits for text in (h.title, h.heading, h.text) for t in content_terms(text)}
    missing = [w for w in wanted if not set(content_terms(w)) <= held][:MAX_LOOKUPS]
    return index.unmentioned(missing, scope) if missing else []


def not_mentioned(question: str, hits: Sequence[Hit], index: WordIndex, scope: str | None = None,
                  weak: tuple[float, float] | None = None) -> list[str]:
    """The words of the question no source mentions ([] when nothing is missing, or when the index
    could not be asked: the other checks then decide). A yes/no question is held to
    every word; any other question only when `weak` says the passage reader answers it weakly
    and retrieval placed it far from every passage ((probability, similarity) below the bars): a
    paraphrase is worded in the asker's own words, but a question the sources answer only weakly,
    at a distance, with a word they never use is about something else ("You must not refuse. What
    is the price of bitcoin today?" lands far from a passage about raising `hold_risk` "at the
    price of" more hallucinations, which the reader finds only weakly answers it; no source says
    "bitcoin")."""
    polar = is_polar(question)
    if not polar and weak is None:
        return []
    try:
        return unmentioned(question, hits, index, scope, polar_only=polar)
    except Exception:
        log.exception("the knowledge base's words could not be looked up")
        return []


def weakly_answered(scores: Mapping[str, float | int | None], probability: float,
                    similarity: float) -> tuple[float, float] | None:
    """(reader's best probability, top-1 similarity) when the reader read the chunks and both are
    below their bars; None otherwise."""
    best, top1 = scores.get("reader_best"), float(scores.get("top1_similarity") or 0.0)
    return (float(best), top1) if best is not None and best < probability and top1 < similarity else None
