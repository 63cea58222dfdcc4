"""Where a claim's evidence comes from: the sentences (and headings) of the chunks it cites."""

from __future__ import annotations

from collections.abc import Sequence

from core.messages import Hit
from core.text.lexicon import AUXILIARIES, content_terms
from core.text.names import critical_tokens
from core.text.normalize import normalize_text, words
from core.text.sentences import split_sentences
from core.verify.features import Sentence, make_sentence

_POLAR_WORDS = frozenset(["yes", "no", "بله", "آری", "خیر", "نه"])
_WH_WORDS = frozenset(["who", "whom", "whose", "what", "which", "where", "when", "why", "how",
                       "چه", "چی", "کجا", "کی", "چرا", "چگونه", "چطور", "کدام", "چند"])
_ASKS_FOR = frozenset(["name", "list", "give", "identify", "describe", "explain", "tell", "find"])


def evidence_sentences(hits: Sequence[Hit], numbers: Sequence[int]) -> list[Sentence]:
    """Sentences of the cited chunks, in order, then their headings and titles (a document
    often names its subject only in its title: "Sweet Frog", then "The chain was founded ...")."""
    out: list[Sentence] = []
    for n in numbers:
        hit = hits[n - 1]
        out.extend(make_sentence(n, sent) for sent in split_sentences(hit.text))
        for label in dict.fromkeys(t.strip() for t in (hit.heading, hit.title) if t and t.strip()):
            out.append(make_sentence(n, label))
    return out


def with_neighbours(hits: Sequence[Hit], numbers: Sequence[int]) -> list[int]:
    """The cited chunks and, after them, the retrieved chunks right next to one of them in the
    same document: a chunk boundary is where ingestion cut a passage, not where its meaning
    ends, so a claim drawn from both sides of it is still stated by what it cites."""
    out = list(numbers)
    for n in numbers:
        a = hits[n - 1]
        for m, b in enumerate(hits, start=1):
            if m not in out and b.doc_id == a.doc_id and abs(b.position - a.position) == 1:
                out.append(m)
    return out


def labels(hits: Sequence[Hit], numbers: Sequence[int]) -> set[str]:
    """The titles and headings of these chunks: what their sentences are about."""
    return {t for n in numbers for t in (hits[n - 1].title, hits[n - 1].heading) if t}


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


SUPPORT_WORDS = 100  # what the claim judge reads of the evidence, at most (as trained)
SUPPORT_SENTENCES = 3


def support_passage(claim: str, sentences: Sequence[str], title: str = "", max_words: int = SUPPORT_WORDS,
                    most: int = SUPPORT_SENTENCES) -> str:
    """The few evidence sentences that say most about a claim, in source order, after the title.

    The claim judge reads at most `max_words` words: a chunk's first words are often not the
    ones that state a claim, and a claim merged from two sentences needs both. Sentences are
    ranked by the content words they share with the claim (numbers and names count double);
    the best is always kept, the next ones while they fit. Training builds its pairs with this
    too (bench/training/claim_judge/data.py), so the judge reads at run time what it learnt on.
    """
    claim_terms = set(content_terms(claim))
    exact = {t.casefold() for t in critical_tokens(claim)}
    scored = []
    for pos, sent in enumerate(sentences):
        terms = set(content_terms(sent))
        low = normalize_text(sent)
        score = len(claim_terms & terms) + sum(1 for t in exact if t in low)
        scored.append((-score, pos, sent))
    scored.sort()
    chosen: list[tuple[int, str]] = []
    budget = max_words - len(title.split())
    for neg, pos, sent in scored[:most]:
        n = len(sent.split())
        if chosen and (neg == 0 or n > budget):
            continue
        chosen.append((pos, " ".join(sent.split()[: max(1, budget)])))
        budget -= n
    body = " ".join(s for _, s in sorted(chosen))
    return f"{title.strip()}: {body}" if title.strip() else body

