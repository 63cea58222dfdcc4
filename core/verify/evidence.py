"""Where a claim's evidence comes from: the sentences (and headings) of the chunks it cites."""

from __future__ import annotations

from collections.abc import Sequence

from core.claims import split_sentences
from core.lexicon import AUXILIARIES, content_terms
from core.messages import Hit
from core.normalize import normalize_text, words
from core.verify.features import Sentence, make_sentence

_POLAR_WORDS = frozenset(["yes", "no", "بله", "آری", "خیر", "نه"])
_WH_WORDS = frozenset(["who", "whom", "whose", "what", "which", "where", "when", "why", "how",
                       "چه", "چی", "کجا", "کی", "چرا", "چگونه", "چطور", "کدام", "چند"])
_ASKS_FOR = frozenset(["name", "list", "give", "identify", "describe", "explain", "tell", "find"])


def evidence_sentences(hits: Sequence[Hit], numbers: Sequence[int]) -> list[Sentence]:
    """Sentences (and headings) of the cited chunks, in order."""
    out: list[Sentence] = []
    for n in numbers:
        hit = hits[n - 1]
        out.extend(make_sentence(n, sent) for sent in split_sentences(hit.text))
        if hit.heading:
            out.append(make_sentence(n, hit.heading))
    return out


def evidence_text(hits: Sequence[Hit], numbers: Sequence[int]) -> str:
    """The cited chunks' text, in citation order: what the claim judge reads."""
    return " ".join(hits[n - 1].text for n in numbers if 1 <= n <= len(hits))


def is_bare_polarity(claim: str) -> bool:
    """A bare "yes" or "no", alone or in a sentence of nothing else ("No, they are not.", "The
    answer is yes."): it has no words of its own to support, so whatever its form it is checked
    through its question, like the single word."""
    tokens = words(normalize_text(claim))
    return bool(_POLAR_WORDS.intersection(tokens)) and all(t in _POLAR_WORDS for t in content_terms(claim))


def is_polar(question: str) -> bool:
    """A yes/no question: it opens with an auxiliary ("Is ...", "Did ..."), or asks no wh-word
    and is not a request for something ("Name the member of ...")."""
    tokens = words(normalize_text(question))
    if tokens[:1] and tokens[0] in AUXILIARIES:
        return True
    return not _WH_WORDS.intersection(tokens) and not (tokens[:1] and tokens[0] in _ASKS_FOR)
