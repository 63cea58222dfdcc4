"""Train the term selector and export it: `python -m bench.training.term_selector` (needs the
`train` extra).

Builds the examples (bench/training/term_selector/data.py), trains the shipped MiniLM's first
--layers layers with a token-classification head (resumable: rerun the same command after a stop),
exports int8 ONNX to --out, then reads the dev and test follow-ups through groundbot's own runtime
(models/term_selector.py, core/retrieve/terms.py): the threshold with the best dev F1 of
the added words is the one shipped (core/settings.py `[retrieval] term_threshold`), and the words
it selects are scored against the words the human rewrite adds, per source and split, into
--results (bench/results/term-selector-training.json) and bench/results/history.csv.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Sequence
from pathlib import Path

from bench.history import record
from bench.training.pair_model import truncated_minilm
from bench.training.term_selector.data import TURNS, TermExample, build
from core.retrieve.terms import asked_terms, selected_terms
from core.text.lexicon import content_terms

RESULTS = Path(__file__).resolve().parents[2] / "results" / "term-selector-training.json"
MODEL = Path(__file__).resolve().parents[3] / "models" / "terms.onnx"
THRESHOLDS = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m bench.training.term_selector", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", type=Path, default=Path("/tmp/groundbot-terms"), help="checkpoints (default %(default)s)")
    ap.add_argument("--layers", type=int, default=6, help="MiniLM layers kept (default %(default)s)")
    ap.add_argument("--max-length", type=int, default=256, help="word pieces per example (default %(default)s)")
    ap.add_argument("--epochs", type=float, default=3.0)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--lr", type=float, default=5e-5)
    ap.add_argument("--pos-weight", type=float, default=3.0, help="weight of a selected word in the loss")
    ap.add_argument("--threads", type=int, default=2, help="torch threads while training")
    ap.add_argument("--shifted-every", type=int, default=0,
                    help="every Nth training question also after another conversation's turns, nothing selected (0 = none)")
    ap.add_argument("--evaluate-only", action="store_true", help="no training: the dev and test figures of --out")
    ap.add_argument("--out", type=Path, default=MODEL, help="int8 ONNX file (default models/terms.onnx)")
    ap.add_argument("--results", type=Path, default=RESULTS)
    ap.add_argument("--no-history", action="store_true", help="do not add rows to bench/results/history.csv")
    return ap.parse_args(argv)


def figures(examples: Sequence[TermExample], probs: Sequence[Sequence[float]], threshold: float) -> dict[str, float]:
    """Added-word precision, recall and F1 (stemmed content words, micro-averaged) against the
    human rewrite, and the share of questions needing nothing that get nothing."""
    tp = predicted = gold = alone = unchanged = 0
    for e, p in zip(examples, probs, strict=True):
        picked = selected_terms(e.history, p, e.question, threshold)
        mine = frozenset(content_terms(" ".join(picked))) - asked_terms(e.question)
        tp += len(mine & e.gold)
        predicted += len(mine)
        gold += len(e.gold)
        if not e.gold:
            unchanged += 1
            alone += not mine
    prec = tp / predicted if predicted else 0.0
    rec = tp / gold if gold else 0.0
    f1 = 2 * prec * rec / (prec + rec) if prec + rec else 0.0
    return {"precision": round(prec, 4), "recall": round(rec, 4), "f1": round(f1, 4), "n": len(examples),
            "left_alone": round(alone / unchanged, 4) if unchanged else 0.0, "left_alone_n": unchanged}


def evaluate(out: Path, examples: Sequence[TermExample]) -> dict[str, object]:
    from models.term_selector import OnnxTermSelector

    selector = OnnxTermSelector(out)
    held = [e for e in examples if e.split in ("dev", "test")]
    t0 = time.perf_counter()
    probs = {e.id: selector.probabilities(e.history, e.question) for e in held}
    ms = 1000 * (time.perf_counter() - t0) / max(1, len(held))
    dev = [e for e in held if e.split == "dev"]
    sweep = {str(t): figures(dev, [probs[e.id] for e in dev], t) for t in THRESHOLDS}
    best = max(THRESHOLDS, key=lambda t: (sweep[str(t)]["f1"], -t))
    rows: dict[str, object] = {}
    for split in ("dev", "test"):
        for source in ("canard", "mtrag", "all"):
            part = [e for e in held if e.split == split and source in (e.source, "all")]
            rows[f"{source}_{split}"] = figures(part, [probs[e.id] for e in part], best)
    return {"threshold": best, "dev_sweep": sweep, "figures": rows, "ms_per_question": round(ms, 2)}


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    examples = build(TURNS, args.shifted_every)
    train_part = [e for e in examples if e.split == "train"]
    print(f"{len(examples)} examples, {len(train_part)} to train on "
          f"({sum(map(sum, (e.labels for e in train_part)))} selected words)", flush=True)
    t0 = time.perf_counter()
    if not args.evaluate_only:
        from bench.training.term_selector.train import export_onnx, train

        args.work.mkdir(parents=True, exist_ok=True)
        base = truncated_minilm(args.layers, args.work)
        run = args.work / f"run-{args.layers}l-{args.max_length}-e{args.epochs:g}-s{args.shifted_every}"
        model, tokenizer = train(base, train_part, run, max_length=args.max_length, epochs=args.epochs,
                                 batch=args.batch, lr=args.lr, pos_weight=args.pos_weight)
        export_onnx(model, tokenizer, args.out, run)
    result = evaluate(args.out, examples)
    result.update(command="python -m bench.training.term_selector " + " ".join(argv or []),
                  layers=args.layers, max_length=args.max_length, epochs=args.epochs, lr=args.lr,
                  pos_weight=args.pos_weight, shifted_every=args.shifted_every, train_examples=len(train_part), seconds=round(time.perf_counter() - t0),
                  model_mb=round(args.out.stat().st_size / 1e6, 1))
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(result["figures"], indent=1), f"threshold {result['threshold']}", flush=True)
    if not args.no_history:
        figs = result["figures"]
        assert isinstance(figs, dict)
        record(args.results.stem, {f"{k}_{m}": v[m] for k, v in figs.items() for m in ("precision", "recall", "f1")},
               f"threshold {result['threshold']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
