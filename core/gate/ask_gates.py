"""The gates that read what is asked against the chunks the passage reader let through.

They run among a turn's gates after the similarity gates and the reader's verdict
(core/gate/gates.py), in the order of `ASK_GATES`; the first that fails refuses the turn with its
reason code and its catalogue text before anything is written. Each is a named gate over the ask
(`AskView`), returning its refusal (core/gate/chain.py: `Verdict`), or None when it lets the
question through. docs/architecture.md ("How do I add a gate?") says how to add one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from core import reasons
from core.gate.asks_when import asks_when, says_when
from core.gate.chain import Gate, Scores, Verdict, refuse
from core.gate.mentions import WordIndex, is_polar, not_mentioned, weakly_answered
from core.gate.passage_reading import trusted, was_read
from core.messages import Hit
from core.settings import CoreSettings
from core.text.sentences import split_sentences


@dataclass(frozen=True)
class AskView:
    """What an ask gate reads: the user's own words, the chunks in the reader's order, the gate's
    scores, and where to look words up."""

    stated: str  # the question in the user's words (not the words a follow-up's reading added)
    hits: Sequence[Hit]
    scores: Scores
    words: WordIndex
    scope: str | None
    settings: CoreSettings


def mentioned_words(view: AskView) -> Verdict | None:
    """A yes/no question about something no document mentions ("Can groundbot send emails?"): a
    quote about something else reads as a yes (core/gate/mentions.py); any other question only
    when the reader and retrieval are both weak on it."""
    if not view.settings.extractive.mentioned_words:
        return None
    r = view.settings.reader
    weak = weakly_answered(view.scores, r.unknown_word_probability, r.unknown_word_similarity)
    absent = not_mentioned(view.stated, view.hits, view.words, view.scope, weak)
    if not absent:
        return None
    key = "gate_unmentioned" if is_polar(view.stated) else "gate_unmentioned_weak"
    return refuse(reasons.NOT_ANSWERED_BY_SOURCES, key, words=", ".join(f"“{w}”" for w in absent))


def says_when_gate(view: AskView) -> Verdict | None:
    """A question asking when, where no chunk that may be quoted from has a sentence that says when."""
    if not view.settings.extractive.asks_when or not asks_when(view.stated):
        return None
    floor, read = view.settings.reader.min_answer_probability, was_read(view.hits)
    quotable = [h for h in view.hits if trusted(h, floor, read)]
    if any(says_when(s) for h in quotable for s in split_sentences(h.faq_answer or h.text)):
        return None
    return refuse(reasons.NOT_ANSWERED_BY_SOURCES, "gate_says_when")


ASK_GATES: tuple[Gate[AskView], ...] = (Gate("mentioned_words", mentioned_words), Gate("says_when", says_when_gate))
