"""Condense a follow-up question with the previous turns before retrieval."""

from __future__ import annotations

from collections.abc import Sequence

from core.lexicon import content_terms
from core.normalize import normalize_text, words

_ANAPHORA = frozenset(
    "it its this that these those they them their there he she his her same above "
    "او آن این آنها اینها همین همان".split()
)


def is_follow_up(question: str) -> bool:
    """Short questions, or ones pointing back ("and how do I change it?")."""
    norm = normalize_text(question)
    toks = words(norm)
    if not toks:
        return False
    if len(content_terms(norm, normalized=True)) <= 2:
        return True
    return bool(_ANAPHORA & set(toks)) or toks[0] in {"and", "also", "what about", "و"}


def condense(question: str, history: Sequence[tuple[str, str]], turns: int) -> str:
    """The text used for retrieval: the question, prefixed by earlier questions if it follows up."""
    if not history or turns <= 0 or not is_follow_up(question):
        return question
    previous = [q for q, _ in history[-turns:] if q.strip()]
    return " ".join([*previous, question])
