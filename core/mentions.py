"""A yes/no question about something the knowledge base never mentions is not answered from it.

"Can groundbot send emails to users?" shares "groundbot", "send" and "users" with passages about
the refusal message, and the passage reader, which reads how a passage answers the question's
topic, says one answers. But no document says "email": whether groundbot sends them is not
something its sources can settle, and a quote about something else reads as a yes. So before the
extractive generator quotes an answer to a yes/no question, each of the question's content words
that no retrieved chunk holds is looked up in the whole index (its full-text matching: stems,
folded accents); one that no chunk holds at all refuses the question with
NOT_ANSWERED_BY_SOURCES, naming the word. A paraphrase in the knowledge base's own words passes
("Is the refusal text configurable?": "configuration" shares the stem). A language model's answer
is not held to this: its claims are checked one by one.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from core.lexicon import AUXILIARIES, STOP, content_terms
from core.messages import Hit
from core.normalize import normalize_text, words
from core.ports import ChunkIndex

log = logging.getLogger(__name__)
MIN_LETTERS = 3  # shorter words ("re" of "re-ingested", "AI") say too little to refuse on
MAX_LOOKUPS = 8  # words looked up in the index per question: a long pasted "question" costs no more


def asked_words(question: str) -> list[str]:
    """The content words of a yes/no question (one opening with an auxiliary: "Can ...", "Does
    ..."), numbers left to the name check (core/named_terms.py); [] for any other question. The
    words either side of an "or" are left out: a choice's alternatives are the asker's words, and
    the sources need say only one of them, maybe otherwise ("faster or slower": "more quickly")."""
    ws = words(normalize_text(question))
    if not ws or ws[0] not in AUXILIARIES:
        return []
    choices = {ws[i + d] for i, w in enumerate(ws) if w == "or" for d in (-1, 1) if 0 <= i + d < len(ws)}
    return [w for w in dict.fromkeys(ws)
            if w not in STOP and w not in choices and len(w) >= MIN_LETTERS and not w.isdigit()]


def unmentioned(question: str, hits: Sequence[Hit], index: ChunkIndex, scope: str | None = None) -> list[str]:
    """The words of a yes/no question that no chunk of the knowledge base (of `scope`) holds:
    first those the retrieved chunks do not hold (no lookup), then the first `MAX_LOOKUPS` of
    them, each in the index."""
    wanted = asked_words(question)
    if not wanted:
        return []
    held = {t for h in hits for text in (h.title, h.heading, h.text) for t in content_terms(text)}
    missing = [w for w in wanted if not set(content_terms(w)) <= held][:MAX_LOOKUPS]
    return index.unmentioned(missing, scope) if missing else []


def not_mentioned(question: str, hits: Sequence[Hit], index: ChunkIndex, scope: str | None = None) -> str:
    """Why the question is not answered from these sources ("" when nothing is missing, or when
    the index could not be asked: the other checks then decide)."""
    try:
        absent = unmentioned(question, hits, index, scope)
    except Exception:
        log.exception("the knowledge base's words could not be looked up")
        return ""
    if not absent:
        return ""
    return f"No source mentions {', '.join(repr(w) for w in absent)}, which the question asks about."
