"""How a question is read in its conversation, before anything is searched.

"Which one is cheaper?" after "What storage plans does IBM Cloud offer?" leans on the question
before it; "What causes wildfires?" after a question on safe rooms does not. The term selector
(core/retrieve/terms.py, a token classifier trained on people's rewrites) picks the earlier words a
follow-up needs; the question with those words is what the passage reader, the generator and the
verifier read, and search fuses it with the question as asked and the question glued after the one
before (core/retrieve/search.py). A language model's rewrite, where one is configured, is one more
reading. Nothing here is shown to the user unless it is a question a person would write
(`well_formed`): a reading made of selected words is said as "following on from" the question
before. What it returns is a reading for the stages, never an answer: everything the user gets
is still verified against the sources.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from core.messages import PriorTurn, ReadingMethod, Resolution
from core.ports import TermSelector
from core.retrieve.terms import history_words, question_words, selected_terms
from core.text.language import language_of
from core.text.lexicon import AUXILIARIES, STOP, content_terms


def earlier(history: Sequence[PriorTurn], scope: str | None, turns: int) -> list[PriorTurn]:
    """The earlier turns a follow-up may lean on: the last `turns` of the same knowledge scope
    (a thread continued in another scope's channel starts afresh: nothing of the old scope is read)."""
    same = [t for t in history if (t.scope or "") == (scope or "") and t.question.strip()]
    return same[-turns:] if turns > 0 else []


def resolve(question: str, prior: Sequence[PriorTurn], selector: TermSelector | None = None,
            threshold: float = 0.5) -> Resolution:
    """The question read with `prior`, the earlier turns it may lean on (`earlier`, taken once per
    turn by the caller): the words of theirs it needs (the term selector's pick, English only: it
    was trained on English rewrites), and the question glued after the one before it, searched
    beside it unless the selector finds that the question needs no earlier word
    (core/retrieve/search.py: `queries`)."""
    unnamed = unnamed_referent(question, prior)
    if not prior:
        return Resolution(question, question, why="no earlier turn in this conversation", unnamed=unnamed)
    last = prior[-1]
    base = Resolution(question, question, method=ReadingMethod.GLUED, previous=last.question, previous_section=last.section,
                      unnamed=unnamed, leaning=glued(question, prior))
    if selector is None or language_of(question) != "en":
        why = "no term selector" if selector is None else "not English: searched with the question before it"
        return replace(base, why=why)
    same_language = [t for t in prior if language_of(t.question) == "en"]  # a Persian turn lends no English words
    words_before, asked = history_words(same_language), question_words(question)
    terms = selected_terms(words_before, selector.probabilities(words_before, asked), asked, threshold)
    if not terms:
        return replace(base, method=ReadingMethod.STANDALONE, why="needs no word of the earlier turns")
    return replace(base, resolved=f"{question.strip()} {' '.join(terms)}", follow_up=True, method=ReadingMethod.TERMS,
                   why=f"with {', '.join(terms)} from before", new_terms=new_terms(question, last.question),
                   terms=terms)


def glued(question: str, prior: Sequence[PriorTurn]) -> str:
    """The question after the one before it ("" with no earlier turn): one more search of a
    follow-up, and the only one beside the question of a turn read without the selector."""
    return f"{prior[-1].question.strip()} {question.strip()}" if prior else ""


def new_terms(question: str, previous: str) -> tuple[str, ...]:
    """The content words a follow-up asks about that the question before it did not use."""
    before = set(content_terms(previous))
    return tuple(t for t in dict.fromkeys(content_terms(question)) if t not in before)


_POINTING = re.compile(r"\b(?:this|these|those)\s+([^\W\d_][\w'-]*)", re.IGNORECASE)
_FUNCTION = STOP | AUXILIARIES


def unnamed_referent(question: str, prior: Sequence[PriorTurn]) -> str:
    """The phrase of a later question that points at one thing the conversation never named
    ("this library", "these burgers"), or "": such a question has as many readings as there are
    libraries or burgers, and is asked back rather than guessed. The thing is the word after
    "this", "these" or "those" when it is no function word; a first question's "this" is the
    knowledge base's to read ("that" is left out: it is mostly a relative pronoun)."""
    if not prior:
        return ""
    said = set(content_terms(" ".join(f"{t.question} {t.answer}" for t in prior)))
    for m in _POINTING.finditer(question):
        head = m.group(1).lower()
        if head in _FUNCTION or not content_terms(head):
            continue
        if not set(content_terms(head)) & said:
            return m.group(0)
    return ""


_REPEATED = re.compile(r"\b(\w+(?:\s+\w+){1,})\b.*\b\1\b", re.IGNORECASE)
_GLUED_MARKS = re.compile(r"[.!,;:]\s*[?؟]|[?؟]\s*[.!?؟]|\(\s*\)|\)\s*[?؟]")
_DOUBLED_WORD = re.compile(r"\b(\w+)\s+\1\b", re.IGNORECASE)


@dataclass(frozen=True)
class Check:
    """A yes-or-no check's answer: true when the check passes, with `why` it does not otherwise."""

    passed: bool
    why: str = ""

    def __bool__(self) -> bool:
        return self.passed


PASSED = Check(True)


def failed(why: str) -> Check:
    return Check(False, why)


def well_formed(reading: str, asked: str = "") -> Check:
    """Whether a reading can be shown as a question a person would write; not when it is empty,
    has no closing question mark, brackets, a doubled word, a phrase of two or more words said
    twice, or glued marks ("sync.?")."""
    text = " ".join(reading.split())
    if not text:
        return failed("it is empty")
    if not text.endswith(("?", "؟")):
        return failed("it does not end as a question")
    if "(" in text or ")" in text or "[" in text:
        return failed("it holds brackets")
    if _GLUED_MARKS.search(text):
        return failed("it has marks glued together")
    if (m := _DOUBLED_WORD.search(text)) and m.group(1).lower() not in ("that", "had"):
        return failed(f"it says “{m.group(1)}” twice in a row")
    m = _REPEATED.search(text)
    if m and len(content_terms(m.group(1))) >= 1 and m.group(1).lower() not in asked.lower():
        return failed(f"it says “{m.group(1)}” twice")
    return PASSED
