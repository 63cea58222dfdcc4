"""Condense a follow-up question with the previous turns before retrieval."""

from __future__ import annotations

from collections.abc import Sequence

from core.text.normalize import normalize_text, words

_ANAPHORA = frozenset(
    ["it", "its", "this", "that", "these", "those", "they", "them", "their", "there", "he", "she", "his", "her", "same", "above", "او", "آن", "این", "آنها", "اینها", "همین", "همان"]
)


_LEADS = ("and ", "also ", "what about ", "how about ", "and?", "و ", "پس ")


def is_follow_up(question: str) -> bool:
    """Questions that point back ("and how do I change it?", "what about Slack?").

    A short question is not a follow-up by itself: "Can I use PostgreSQL?" names its topic.
    """
    norm = normalize_text(question)
    toks = words(norm)
    if not toks:
        return False
    return bool(_ANAPHORA & set(toks)) or norm.startswith(_LEADS)


def condense(question: str, history: Sequence[tuple[str, str]], turns: int) -> str:
    """The text used for retrieval: the question, prefixed by earlier questions if it follows up."""
    if not history or turns <= 0 or not is_follow_up(question):
        return question
    previous = [q for q, _ in history[-turns:] if q.strip()]
    return " ".join([*previous, question])
