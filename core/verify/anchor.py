"""Names and numbers must sit where the evidence says what the claim says about them.

The commonest hallucination a word check passes: the right passage, with one of its names or
numbers put where another belongs ("recorded by Elvis Presley in 1949" when the passage says
1960 and mentions 1949 elsewhere). Every word of such a claim is in the evidence, so each
exact token is also checked in place: the evidence sentence that shares most of the claim's
other words is where the claim comes from, and a sentence that holds the token must share at
least `ratio` of that (words weighted by how rare they are among the evidence sentences, so a
topic word found everywhere proves little). Tokens the question names, and the passage's topic
(a token in most of its sentences), are not checked: they say what the claim is about, not
what it says.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

from core.lexicon import content_terms
from core.normalize import normalize_text, words
from core.verify.features import Sentence, fold, present
from core.verify.names import critical_tokens


def misplaced(claim: str, question: str, sentences: Sequence[Sentence], ratio: float) -> list[str]:
    """The claim's numbers and names that the evidence holds only away from what the claim says."""
    if ratio <= 0 or len(sentences) < 2:
        return []
    asked = {fold(w) for w in words(normalize_text(question))}
    df: Counter[str] = Counter(t for s in sentences for t in s.terms)
    n = len(sentences)

    def weight(terms: set[str]) -> float:
        return sum(math.log(1.0 + n / df[t]) for t in terms if df[t])

    claim_terms = set(content_terms(claim))
    out: list[str] = []
    for token in dict.fromkeys(critical_tokens(claim)):
        parts = {fold(w) for w in words(token)}
        if parts & asked:
            continue
        holding = [i for i, s in enumerate(sentences) if present(token, set(s.tokens))]
        if not holding or 2 * len(holding) > n:
            continue
        rest = claim_terms - set(content_terms(token))
        shared = [weight(rest & s.terms) for s in sentences]
        best = max(shared)
        if best > 0 and max(shared[i] for i in holding) < ratio * best:
            out.append(token)
    return out
