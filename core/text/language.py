"""Which language a text is in, as far as groundbot cares: Persian (Arabic script) or not.

A mixed knowledge base answers each question from sources in the question's language where
such sources exist, and refuses, suggests and explains in that language.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import TypeVar

from core.text.lexicon import STOP_EN, STOP_FA
from core.text.normalize import normalize_text, words

T = TypeVar("T")


@lru_cache(maxsize=8192)
def language_of(text: str) -> str:
    """"fa" or "en": the language of the text's grammar words ("groundbot چیست؟" is Persian,
    "What is تخت جمشید?" English), else of most of its letters. Cached: every turn asks it of
    each retrieved passage."""
    tokens = words(normalize_text(text))
    fa = sum(1 for w in tokens if w in STOP_FA)
    en = sum(1 for w in tokens if w in STOP_EN)
    if fa != en:
        return "fa" if fa > en else "en"
    arabic = latin = 0
    for ch in text:
        if "\u0600" <= ch <= "\u06ff" or "\ufb50" <= ch <= "\ufeff":
            arabic += 1
        elif ch.isalpha():
            latin += 1
    return "fa" if arabic and arabic >= latin else "en"


def prefer_language(items: Sequence[T], lang: str, text_of: Callable[[T], str]) -> list[T]:
    """The items in `lang` (order kept) when there is at least one; else all of them."""
    same = [it for it in items if language_of(text_of(it)) == lang]
    return same if same else list(items)
