"""Which words of the earlier turns a follow-up needs: a learned reading, not a pattern list.

"Which one is cheaper?" after "What storage plans does IBM Cloud offer?" needs "storage plans" and
"IBM Cloud"; "Why did he think the band lacked effort?" needs "Frank Zappa". A term selector (a
token classifier trained on human rewrites: bench/training/term_selector/, models/terms.md)
reads the earlier turns and the question as one sequence of words and gives each earlier word the
probability that a person rewriting the question into one of its own would add it. The words it
selects go to search beside the question as asked, never to the user: a bag of words is not a
question anyone would write.

The words the selector reads are laid out here, once, for training and for the running bot alike.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from core.messages import PriorTurn
from core.text.citations import rewrite
from core.text.lexicon import content_terms

ANSWER_WORDS = 30  # an earlier answer's first words: enough to name what it spoke of
HISTORY_WORDS = 150  # the most recent earlier words read (the model reads at most 256 word pieces)
QUESTION_WORDS = 40
SEPARATOR = "|"  # between the earlier turns' parts: a word the selector never selects
_WORD = re.compile(r"[^\W_]+(?:['’.-][^\W_]+)*|[|]", re.UNICODE)


def word_list(text: str) -> list[str]:
    """The words of a text as the selector reads them (punctuation dropped, inner hyphens,
    apostrophes and dots kept: "re-ingest", "don't", "gpt-4.1"); a citation, as written or as
    users read it ("[C1]", "[1]"), is no word."""
    return _WORD.findall(rewrite(text, lambda m: " ", shown=True))


def history_words(prior: Sequence[PriorTurn]) -> list[str]:
    """The earlier turns, oldest first, as the selector reads them: each turn's section (when it
    differs from the turn before), its question as asked and the first words of its answer (none
    for a refusal: a turn with no section answered nothing), the
    parts separated by SEPARATOR; the last HISTORY_WORDS words."""
    out: list[str] = []
    section = ""
    for turn in prior:
        if turn.section and turn.section != section:
            out += [*word_list(turn.section), SEPARATOR]
            section = turn.section
        out += [*word_list(turn.question), SEPARATOR]
        answer = word_list(turn.answer)[:ANSWER_WORDS] if turn.section else []  # a refusal says nothing of the topic
        if answer:
            out += [*answer, SEPARATOR]
    return out[-HISTORY_WORDS:]


def question_words(question: str) -> list[str]:
    return word_list(question)[:QUESTION_WORDS]


def terms_of(word: str) -> frozenset[str]:
    """A word's stemmed content terms ("re-ingest" -> {"re", "ingest"}); none for a function word."""
    return frozenset(content_terms(word)) if word != SEPARATOR else frozenset()


def candidate(word: str, asked: frozenset[str]) -> bool:
    """A word the selector may select: a content word the question does not already hold."""
    own = terms_of(word)
    return bool(own) and not own <= asked


def asked_terms(words: Sequence[str]) -> frozenset[str]:
    return frozenset(content_terms(" ".join(words)))


def selected_terms(history: Sequence[str], probabilities: Sequence[float], question: Sequence[str],
                   threshold: float) -> tuple[str, ...]:
    """The earlier words at or above `threshold`, once each (by stem), in the order they were said,
    that the question does not already hold."""
    asked = asked_terms(question)
    seen: set[frozenset[str]] = set()
    out: list[str] = []
    for word, p in zip(history, probabilities, strict=True):
        key = terms_of(word)
        if p >= threshold and candidate(word, asked) and key not in seen:
            seen.add(key)
            out.append(word)
    return tuple(out)
