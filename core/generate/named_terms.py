"""Names the question asks about, and whether the sources mention them at all.

A quote can be about a question without answering it: "Can groundbot run on Discord?" shares
"groundbot" and "run" with a dozen passages, none of which says Discord. The extractive
generator therefore quotes nothing when a name, acronym or number of the question is in none of
the retrieved chunks (`[generator] named_terms`). A generated answer is not held to this: the
claim checks read what it says, and a multi-hop question may name a bridge entity its evidence
never states.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from core.messages import Hit
from core.text.fuzzy import word_similarity
from core.text.names import critical_tokens, fold
from core.text.normalize import normalize_text, words


def absent_names(question: str, hits: Sequence[Hit]) -> list[str]:
    """The question's names, acronyms and numbers (of 3 characters or more) that no chunk holds,
    in its text, heading or title: a question about Discord is not answered by sources that
    never say Discord, however close their wording. Spelling is folded (accents, case), and a
    long word may be misspelt by a letter or two."""
    wanted = [t for t in dict.fromkeys(critical_tokens(question)) if not t.isdigit() or len(t) >= 3]
    if not wanted:
        return []
    held: set[str] = set()
    for h in hits:
        for text in (h.text, h.heading, h.title):
            held.update(fold(w) for w in words(normalize_text(text)))
    return [t for t in wanted if not all(_held(fold(w), held) for w in words(t))]


ROOT_LETTERS = 7  # two words that open with this many letters alike ...
ENDING_LETTERS = 3  # ... and differ only in an ending this long are one name's forms


def _held(word: str, held: set[str]) -> bool:
    """The word, or for a word of 5 letters or more one spelt nearly alike ("Bedigo" for
    "Bendigo"): a misspelt name is still the name the sources mention; or another form of it
    ("the National Highway Designated Act" for "Designation Act")."""
    if word in held:
        return True
    return len(word) >= 5 and any(w[:1] == word[:1] and (_same_root(word, w) or (
        abs(len(w) - len(word)) <= 2 and word_similarity(word, w) >= 0.85)) for w in held)


def _same_root(a: str, b: str) -> bool:
    """Both words open with ROOT_LETTERS letters alike and differ after them in at most
    ENDING_LETTERS letters each ("designated", "designation")."""
    n = len(os.path.commonprefix([a, b]))
    return n >= ROOT_LETTERS and len(a) - n <= ENDING_LETTERS and len(b) - n <= ENDING_LETTERS
