"""Check the pick in "which came first, A or B?" questions against the dates in the evidence.

Lexical support cannot tell "A was born first" from "B was born first": both are made
of the passage's words. The evidence can: it gives each option a year.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from core.lexicon import content_terms

_EARLY = re.compile(r"\b(first|earlier|earliest|older|oldest|before|sooner)\b", re.IGNORECASE)
_LATE = re.compile(r"\b(younger|youngest|later|latest|newer|newest|more recent|most recent)\b", re.IGNORECASE)
_YEAR = re.compile(r"\b(1[0-9]{3}|20[0-9]{2})\b")


@dataclass(frozen=True)
class ComparisonVerdict:
    options: tuple[str, str]
    years: tuple[int, int]
    expected: str  # the option the evidence makes the answer
    picked: str

    @property
    def agrees(self) -> bool:
        return self.expected == self.picked


def options(question: str) -> tuple[str, str] | None:
    """The two options of an "A or B" question, as written."""
    q = question.strip().rstrip("?").strip()
    if q.lower().count(" or ") != 1:
        return None
    left, right = re.split(r"\s+or\s+", q, maxsplit=1, flags=re.IGNORECASE)
    right = re.split(r"[,;:?]", right)[0].strip()
    left = re.split(r"[,;:]", left)[-1].strip()
    for word in ("first", "earlier", "older", "younger", "later"):
        left = re.sub(rf"^.*\b{word}\b\s*", "", left, flags=re.IGNORECASE) if re.search(rf"\b{word}\b", left, re.I) else left
    if not content_terms(left) or not content_terms(right):
        return None
    return left, right


def _mentions(option_terms: set[str], sentence_terms: set[str]) -> bool:
    return bool(option_terms) and len(option_terms & sentence_terms) / len(option_terms) >= 0.6


_PAREN = re.compile(r"\(([^()]*)\)")


def _year(option: str, sentences: Sequence[str]) -> int | None:
    """The option's year: a year in brackets after its name ("(born 1991)", "(1844–1846)") first."""
    terms = set(content_terms(option))
    for s in sentences:
        if not _mentions(terms, set(content_terms(s))):
            continue
        for group in _PAREN.findall(s):
            m = _YEAR.search(group)
            if m:
                return int(m.group(1))
        m = _YEAR.search(s)
        if m:
            return int(m.group(1))
    return None


def check_comparison(question: str, answer: str, sentences: Sequence[str]) -> ComparisonVerdict | None:
    """A verdict when the question compares two options in time and the evidence dates both."""
    early, late = bool(_EARLY.search(question)), bool(_LATE.search(question))
    if early == late:
        return None
    opts = options(question)
    if opts is None:
        return None
    years = (_year(opts[0], sentences), _year(opts[1], sentences))
    if years[0] is None or years[1] is None or years[0] == years[1]:
        return None
    answer_terms = set(content_terms(answer))
    hits = [len(set(content_terms(o)) & answer_terms) / max(1, len(set(content_terms(o)))) for o in opts]
    if max(hits) < 0.5 or hits[0] == hits[1]:
        return None  # the answer names neither option, or both: nothing to compare
    picked = opts[0] if hits[0] > hits[1] else opts[1]
    earlier = opts[0] if years[0] < years[1] else opts[1]
    later = opts[1] if earlier == opts[0] else opts[0]
    return ComparisonVerdict(opts, (years[0], years[1]), earlier if early else later, picked)
