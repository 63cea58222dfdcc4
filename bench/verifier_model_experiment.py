"""Experiment: can a small cross-encoder tell a right answer from a wrong one, whatever its form?

    python -m bench.verifier_model_experiment [--epochs 3]   # ~15 min on 2 cores; nothing is shipped

The reader experiment (bench/reader_experiment.py) never sees the answer. This one does: the
first four layers of the shipped all-MiniLM-L6-v2 (layer 0 frozen) read "question || answer"
against the evidence sentences and a linear head on the mean-pooled output scores "supported".
A model that sees the answer can learn its *form* instead of its truth (HaluEval's hallucinated
answers are mostly full sentences, its right answers mostly bare names), which the verifier
rules forbid. So the training data is balanced by form:

- right answers bare, restated with the question, and as "The answer is A.";
- a wrong name or year picked from the record's own knowledge, in the same three forms;
- HaluEval's hallucinated sentences (wrong) next to the same sentences with their one wrong
  name swapped for the right answer (true, in the same style), where such a swap is clear.

Dev records only: HaluEval index % 5 != 0, trained on (index // 5) % 4 != 0 and measured on
(index // 5) % 4 == 0, the same slices as bench.reader_experiment. Measured: the share of each
group the lexical verifier passes, alone and with the model's score at or above a threshold.
It is not wired into groundbot; the measured trade-off (bench/results/verifier_model_experiment.md)
is why.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.datasets import HALUEVAL_FILE, TEST_EVERY, HaluRecord, load_halueval
from bench.reader_experiment import claim_text, evidence_for, minilm_layers, train_layers
from bench.train_verifier import restate
from core.lexicon import content_terms
from core.messages import Hit
from core.settings import VerifySettings
from core.verify import verify_answer
from core.verify.names import name_runs

RESULTS = Path(__file__).resolve().parent / "results"
LAYERS, FROZEN, MAX_TOKENS, ANSWER_WORDS = 4, 1, 160, 40
THRESHOLDS = (0.1, 0.2, 0.3, 0.5, 0.7)
GROUPS = ("right", "right_restated", "right_free", "hallucinated", "hallucinated_fixed",
          "wrong_short", "wrong_restated", "wrong_free")
_YEAR = re.compile(r"\b(1[0-9]{3}|20[0-9]{2})\b")
_POLAR = ("yes", "no")

Example = tuple[str, str, str, int, str, str]  # question, claim text, evidence, label, group, answer as built


def wrong_candidates(r: HaluRecord) -> list[str]:
    """Names (or years, for a year answer) of the knowledge that are neither the answer nor asked."""
    if r.right_answer.strip().lower() in _POLAR:
        return []
    if _YEAR.search(r.right_answer):
        return sorted({y for y in _YEAR.findall(r.knowledge) if y not in r.right_answer and y not in r.question})
    answer, asked = set(content_terms(r.right_answer)), set(content_terms(r.question))
    out = set()
    for run in name_runs(r.knowledge):
        name = " ".join(w.capitalize() for w in run)
        terms = set(content_terms(name))
        if terms and not terms & answer and not terms <= asked:
            out.add(name)
    return sorted(out)


def fixed_hallucination(r: HaluRecord) -> str | None:
    """The hallucinated sentence with its one wrong name (or year) swapped for the right answer."""
    q, a, h = r.question, r.right_answer, r.hallucinated_answer
    if a.strip().lower() in _POLAR or len(h.split()) <= 4:
        return None
    asked, answer = set(content_terms(q)), set(content_terms(a))
    wrong = [run for run in name_runs(h)
             if (terms := set(content_terms(" ".join(run)))) and not terms & asked and not terms & answer]
    year = _YEAR.search(a)
    if year:
        years = [y for y in _YEAR.findall(h) if y not in q and y not in a]
        return h.replace(years[0], year.group(0), 1) if len(years) == 1 and not wrong else None
    if len(wrong) != 1:
        return None
    pattern = re.compile(r"\b" + r"\W+".join(re.escape(w) for w in wrong[0]) + r"\b", re.IGNORECASE)
    return pattern.sub(a.strip(), h, count=1) if pattern.search(h) else None


def examples(records: Sequence[HaluRecord], rng: random.Random) -> list[Example]:
    out: list[Example] = []
    for r in records:
        q = r.question
        rows = [(r.right_answer, 1, "right"), (restate(q, r.right_answer), 1, "right_restated"),
                (r.hallucinated_answer, 0, "hallucinated")]
        if fixed := fixed_hallucination(r):
            rows.append((fixed, 1, "hallucinated_fixed"))
        if candidates := wrong_candidates(r):
            w = rng.choice(candidates)
            rows += [(w, 0, "wrong_short"), (restate(q, w), 0, "wrong_restated"), (f"The answer is {w}.", 0, "wrong_free"),
                     (f"The answer is {r.right_answer}.", 1, "right_free")]
        for answer, label, group in rows:
            out.append((q, claim_text(answer) or answer, evidence_for(q, answer, r.knowledge), label, group, answer))
    return out


class CrossEncoder:
    """Four MiniLM layers and a linear head over "question || answer" [SEP] evidence."""

    def __init__(self) -> None:
        import torch

        self.torch = torch
        self.tok, self.enc = minilm_layers(LAYERS, FROZEN)
        self.head = torch.nn.Linear(self.enc.config.hidden_size, 1)

    def logits(self, items: Sequence[Example]) -> Any:
        first = [" ".join(q.split()[:ANSWER_WORDS]) + " || " + " ".join(a.split()[:ANSWER_WORDS]) for q, a, *_ in items]
        b = self.tok(first, [x[2] or "-" for x in items], truncation="longest_first", max_length=MAX_TOKENS,
                     padding=True, return_tensors="pt")
        h = self.enc(**b).last_hidden_state
        mask = b["attention_mask"].unsqueeze(-1).float()
        return self.head((h * mask).sum(1) / mask.sum(1)).squeeze(-1)

    def scores(self, items: Sequence[Example]) -> list[float]:
        self.enc.eval()
        out: list[float] = []
        with self.torch.inference_mode():
            for k in range(0, len(items), 64):
                out += self.torch.sigmoid(self.logits(items[k : k + 64])).tolist()
        self.enc.train()
        return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--halueval", type=Path, default=HALUEVAL_FILE)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--out", type=Path, default=RESULTS / "verifier_model_experiment.json")
    args = ap.parse_args(argv)
    import torch

    torch.manual_seed(0)
    rng = random.Random(0)
    dev = [r for r in load_halueval(args.halueval) if r.index % TEST_EVERY != 0]
    train = examples([r for r in dev if (r.index // TEST_EVERY) % 4 != 0], rng)
    held_records = [r for r in dev if (r.index // TEST_EVERY) % 4 == 0]
    held = examples(held_records, rng)
    knowledge = {r.question: r.knowledge for r in held_records}
    print(f"{len(train)} training examples, {len(held)} held-out", flush=True)
    model = CrossEncoder()
    def loss_of(part: Sequence[Example]) -> Any:
        target = torch.tensor([float(x[3]) for x in part])
        return torch.nn.functional.binary_cross_entropy_with_logits(model.logits(part), target)

    train_layers(model.enc, model.head, train, args.epochs, 5e-5, rng, loss_of)
    probs = model.scores(held)
    timing = []
    with torch.inference_mode():
        for x in held[:200]:  # one reading per answer, as the verifier would do it
            t0 = time.perf_counter()
            model.logits([x])
            timing.append((time.perf_counter() - t0) * 1000)
    lexical = VerifySettings(require_citations=False)
    rows: dict[str, list[tuple[bool, float]]] = {g: [] for g in GROUPS}
    for (q, _, _, _, group, answer), p in zip(held, probs, strict=True):
        hits = [Hit("k", "k", "", "", "", knowledge[q], 1.0)]
        rows[group].append((verify_answer(answer, q, hits, lexical).status != "REFUSE", p))
    result: dict[str, Any] = {"epochs": args.epochs, "training_examples": len(train),
                              "ms_per_reading_p50": round(statistics.median(timing), 2), "groups": {}}
    for group, got in rows.items():
        n = max(1, len(got))
        result["groups"][group] = {"n": len(got), "lexical": round(sum(p for p, _ in got) / n, 4)} | {
            f"lexical+model>={t}": round(sum(p and s >= t for p, s in got) / n, 4) for t in THRESHOLDS}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    lines = ["| held-out dev group (share replied) | n | lexical verifier | " + " | ".join(f"+ model >= {t}" for t in THRESHOLDS) + " |",
             "|---|---:|---:|" + "---:|" * len(THRESHOLDS)]
    for group, row in result["groups"].items():
        lines.append(f"| {group} | {row['n']} | {row['lexical']:.3f} | "
                     + " | ".join(f"{row[f'lexical+model>={t}']:.3f}" for t in THRESHOLDS) + " |")
    lines.append(f"\ncross-encoder: {LAYERS} MiniLM layers, {args.epochs} epochs on {len(train)} examples; "
                 f"one reading p50 {result['ms_per_reading_p50']} ms (2 cores).")
    args.out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
