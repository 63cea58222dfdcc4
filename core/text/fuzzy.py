"""Fuzzy matching of a question against an FAQ question: spelling variants, not topic drift.

Persian users type the same word several ways (Arabic or Persian letters, with or without the
zero-width non-joiner, with a letter doubled or dropped), and English users misspell. The
embedding similarity of an FAQ match tolerates paraphrase; this tolerates spelling. It never
lets a different word through: every content word of each side must have a counterpart on
the other side whose characters mostly agree (difflib's matching-blocks ratio, which unlike
n-gram overlap stays high for a short word with one letter changed), so "reset my password"
never matches "reset my token".
"""

from __future__ import annotations

from difflib import SequenceMatcher
from functools import lru_cache

from core.text.lexicon import content_terms


@lru_cache(maxsize=65536)
def word_similarity(a: str, b: str) -> float:
    """2 * matching characters / total characters (1.0 for equal words)."""
    if a == b:
        return 1.0
    return SequenceMatcher(None, a, b, autojunk=False).ratio()


def _covered(src: list[str], dst: list[str], min_word: float) -> float:
    if not src:
        return 1.0
    return sum(1 for w in src if any(word_similarity(w, v) >= min_word for v in dst)) / len(src)


def faq_match(question: str, faq_question: str, min_word: float = 0.8) -> float:
    """How well the two questions agree word for word, tolerating spelling variants: the lower
    of the two coverages (each side's content words found on the other side), 0..1."""
    q, f = content_terms(question), content_terms(faq_question)
    if not q or not f:
        return 0.0
    return min(_covered(q, f, min_word), _covered(f, q, min_word))
