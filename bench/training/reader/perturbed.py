"""Questions that ask what their passage does not say: a positive pair's question with its last
content word swapped for the last content word of another question of the same source. The
passage still talks about the question's topic, so the pair teaches "talks about" against
"answers" (the shape of a question asked of a knowledge base that does not cover it: "Can
groundbot generate images?" over groundbot's docs). Deterministic for a given seed."""

from __future__ import annotations

import random
import re

from bench.training.reader.common import ReaderPair
from core.text.lexicon import content_terms

_WORD = re.compile(r"[A-Za-z][A-Za-z'-]+")


def _last_content_word(question: str) -> str | None:
    terms = set(content_terms(question))
    words = [w for w in _WORD.findall(question) if set(content_terms(w)) & terms]
    return words[-1] if words else None


def perturbed(pairs: list[ReaderPair], share: float, seed: int) -> list[ReaderPair]:
    """Negatives from `share` of the positives: the question's last content word replaced by
    another question's, when that word is in neither the passage nor the question."""
    rng = random.Random(seed)
    positives = [p for p in pairs if p.label == 1]
    donors = [w for p in positives if (w := _last_content_word(p.question))]
    out: list[ReaderPair] = []
    for p in rng.sample(positives, int(len(positives) * share)) if positives else []:
        word = _last_content_word(p.question)
        if not word or not donors:
            continue
        new = rng.choice(donors)
        passage = f"{p.title} {p.text}".lower()
        if new.lower() in passage or new.lower() in p.question.lower():
            continue
        q = re.sub(rf"\b{re.escape(word)}\b(?!.*\b{re.escape(word)}\b)", new, p.question, count=1)
        out.append(ReaderPair(q, p.title, p.heading, p.text, 0, p.source, p.group, "question asks what the passage does not say"))
    return out
