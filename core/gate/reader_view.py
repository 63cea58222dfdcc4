"""What the passage reader reads of a chunk: its title and heading, then the sentences that
share most with the question, in the order the chunk has them, cut to a word budget.

A chunk (up to ~900 characters) is longer than the reader's input window, and the sentence that
answers is often not the first one; choosing the sentences by the question's words before the
cut keeps the answering sentence in view without a second model run. The reader is trained on
passages built by this same function (bench/training/reader/), so what it learned is what it
reads at run time.
"""

from __future__ import annotations

from core.text.lexicon import content_terms
from core.text.sentences import split_sentences

QUESTION_WORDS = 24  # a longer question is cut to its first words
PASSAGE_WORDS = 80  # title, heading and chosen sentences, in words


def passage_context(title: str, heading: str) -> str:
    """The chunk's title and heading, once each, as the passage's first words."""
    return " / ".join(dict.fromkeys(t.strip() for t in (title, heading) if t and t.strip()))


def _clip(text: str, words: int) -> str:
    return " ".join(text.split()[:words])


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
    chosen: list[int] = []
    used = 0
    for i in ranked:
        size = len(sentences[i].split())
        if used and used + size > budget:
            continue
        chosen.append(i)
        used += size
        if used >= budget:
            break
    body = _clip(" ".join(sentences[i].strip() for i in sorted(chosen)), budget)
    view = f"{context}: {body}" if context else body
    return view.strip() or "-"
