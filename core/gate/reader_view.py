"""What the passage reader reads of a chunk: its title and heading, then the sentences that
share most with the question, in the order the chunk has them, cut to a word budget.

A chunk (up to ~900 characters) is longer than the reader's input window, and the sentence that
answers is often not the first one; choosing the sentences by the question's words before the
cut keeps the answering sentence in view without a second model run. The reader is trained on
passages built by this same function (bench/training/reader/), so what it learned is what it
reads at run time.
"""

from __future__ import annotations

import re

from core.text.lexicon import content_terms
from core.text.sentences import split_sentences

QUESTION_WORDS = 24  # a longer question is cut to its first words
PASSAGE_WORDS = 80  # title, heading and chosen sentences, in words


def passage_context(title: str, heading: str) -> str:
    """The chunk's title and heading, once each, as the passage's first words."""
    return " / ".join(dict.fromkeys(t.strip() for t in (title, heading) if t and t.strip()))


def _clip(text: str, words: int) -> str:
    return " ".join(text.split()[:words])


def _fill(order: list[int], sizes: list[int], budget: int) -> list[int]:
    """The parts taken in `order` while they fit `budget` words (the first always), in text order."""
    chosen: list[int] = []
    used = 0
    for i in order:
        if used and used + sizes[i] > budget:
            continue
        chosen.append(i)
        used += sizes[i]
        if used >= budget:
            break
    return sorted(chosen)


def reader_question(question: str) -> str:
    """The question as the reader reads it."""
    return _clip(question, QUESTION_WORDS)


def reader_passage(question: str, title: str, heading: str, text: str, words: int = PASSAGE_WORDS) -> str:
    """The passage as the reader reads it (deterministic: the same inputs give the same view)."""
    context = passage_context(title, heading)
    budget = max(0, words - len(context.split()))
    sentences = split_sentences(text) or [text]
    q_terms = set(content_terms(question))
    ranked = sorted(range(len(sentences)),
                    key=lambda i: (-len(q_terms & set(content_terms(sentences[i]))), i))
    chosen = _fill(ranked, [len(s.split()) for s in sentences], budget)
    body = _clip(" ".join(sentences[i].strip() for i in chosen), budget)
    view = f"{context}: {body}" if context else body
    return view.strip() or "-"


# A reader that reads more of the question (trained with `python -m bench.training.reader
# --question-words 64`, not the shipped one) reads a long message as its ask: its question sentences
# (latest first), its last sentence, its error line, its first sentence, then the rest from the end,
# each cut to UNIT_WORDS and put back in the message's order. Stack frames and log lines holding
# almost no words are left out: they say where, not what is asked.
UNIT_WORDS = 28
_ERROR_LINE = re.compile(r"(?:\b[A-Za-z_.]*(?:Error|Exception|Warning)\b|\berror\b(?:\[\w+\])?(?:\s+[A-Z]+\d+)?)\s*:", re.IGNORECASE)
_WORD = re.compile(r"[^\W\d_]{2,}")


def _wordy(unit: str) -> bool:
    """Half of the unit's tokens are words: prose, not a stack frame, a path or a log record."""
    tokens = unit.split()
    return bool(tokens) and 2 * sum(1 for t in tokens if _WORD.fullmatch(t.strip(".,;:!?()'\"`"))) >= len(tokens)


def ask_units(message: str) -> list[str]:
    """A message's sentences, line by line (a pasted log is one unit a line)."""
    units: list[str] = []
    for line in message.splitlines():
        line = line.strip()
        if line:
            units += [s.strip() for s in split_sentences(line) if s.strip()] or [line]
    return units


def ask_view(question: str, words: int) -> str:
    """The message whole when it has at most `words` words, else its ask (deterministic)."""
    if len(question.split()) <= words:
        return " ".join(question.split())
    units = ask_units(question)
    if not units:
        return _clip(question, words)
    last = len(units) - 1
    asks = [i for i in range(last, -1, -1) if units[i].rstrip().endswith(("?", "؟"))]
    errors = [i for i in range(last, -1, -1) if _ERROR_LINE.search(units[i])][:1]
    rest = [i for i in range(last, -1, -1) if _wordy(units[i])]
    order = list(dict.fromkeys([*asks, last, *errors, 0, *rest]))
    chosen = _fill(order, [min(UNIT_WORDS, len(u.split())) for u in units], words)
    return " ".join(_clip(units[i], UNIT_WORDS) for i in chosen)
