"""Where should the answerability judge's threshold sit? One benchmark run, every threshold replayed.

    python -m bench.tuning.answerability_sweep --split dev        # choose on dev (odd-index articles are the KB)
    python -m bench.tuning.answerability_sweep --split test       # the same curve on the test half
    python -m bench.tuning.answerability_sweep --split dev --rescore other.onnx   # same run, another model

Runs the SQuAD extractive suite of bench.grounding once, through App.ask like a chat message,
with the judge on and accepting everything (min_answer_probability 0), so every decision is
the lexical one; a recording wrapper around the real judge (storage/answer_judge.py) keeps
the candidates it read and the probabilities it gave. Each threshold is then replayed as
core/extractive.py decides: of the sentences quoted, keep those at or above it; none kept ->
refused (NOT_ANSWERED_BY_SOURCES). Refusals made elsewhere (gates, quote floor, verifier)
stay refusals.

On dev, articles 1 and 11 were held out of the judge's training (bench/training/answerability/train.py)
and the other odd-index articles were trained on; figures are given for both, and the
held-out ones are the honest dev figures. Writes `--out` (JSON) and prints the curve.
"""

from __future__ import annotations

import argparse
import json
import re
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import bot.app
from bench import RESULTS
from bench import datasets as ds
from bench.grounding.harness import contains_gold
from bench.grounding.run import base_config, run_squad_extractive
from bench.training.answerability.train import SQUAD_HELD_OUT
from core.settings import JudgeSettings
from storage.answer_judge import OnnxAnswerJudge

THRESHOLDS = (0.0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9)


class RecordingJudge:
    """The real judge; remembers every question's passages and probabilities."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.calls: dict[str, tuple[list[str], list[float]]] = {}

    def score(self, question: str, passages: Sequence[str]) -> list[float]:
        probs = self.inner.score(question, passages)
        self.calls[key(question)] = (list(passages), list(probs))
        return probs


def key(question: str) -> str:
    return " ".join(question.split())


def sentence_of(passage: str, title_sep: str = ": ") -> str:
    """The candidate sentence of a judged passage (SQuAD titles hold no ': ')."""
    return passage.split(title_sep, 1)[1] if title_sep in passage else passage


_CITATION = re.compile(r"\s*\[C\d+\]\s*")


def outcome(base: dict[str, Any], call: tuple[list[str], list[float]] | None, t: float) -> tuple[bool, bool]:
    """(replied, replied with the gold answer) of one question at threshold t, decided as
    core/extractive.py does: of the sentences the lexical selection quoted in the baseline run,
    keep those the judge gives at least t; none kept -> refused."""
    if base["refused"]:
        return False, False
    if call is None:  # the judge never read it: it did not reach the generator in the judged run
        return False, False
    prob = {" ".join(sentence_of(p).split()): pr for p, pr in zip(*call, strict=True)}
    quoted = [q for q in _CITATION.split(base["reply"]) if q.strip()]
    kept = [q for q in quoted if prob.get(" ".join(q.split()), 0.0) >= t]
    return (True, contains_gold(" ".join(kept), base["gold"])) if kept else (False, False)


def held_out(row: dict[str, Any]) -> bool:
    return any(f"/{a:02d}-" in (row.get("gold_doc") or "") for a in SQUAD_HELD_OUT)


def table(base_rows: list[dict[str, Any]], calls: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for t in THRESHOLDS:
        res: dict[str, Any] = {"threshold": t}
        for subset, keep in (("all", lambda r: True), ("held_out_articles", held_out)):
            by = {p: [r for r in base_rows if r["pass"] == p and (p == "out_of_kb" or keep(r))]
                  for p in ("answerable", "unanswerable", "out_of_kb")}
            got = {p: [outcome(r, calls.get(key(r["question"])), t) for r in rs] for p, rs in by.items()}
            n = {p: max(1, len(v)) for p, v in got.items()}
            res[subset] = {
                "answered_with_gold": round(sum(g for _, g in got["answerable"]) / n["answerable"], 4),
                "answerable_replied": round(sum(r for r, _ in got["answerable"]) / n["answerable"], 4),
                "refusal_rate_unanswerable": round(sum(not r for r, _ in got["unanswerable"]) / n["unanswerable"], 4),
                "refusal_rate_out_of_kb": round(sum(not r for r, _ in got["out_of_kb"]) / n["out_of_kb"], 4),
                "n": {p: len(v) for p, v in got.items()},
            }
        out.append(res)
    return out


def summary(dev: dict[str, Any], test: dict[str, Any], chosen: float, out: Path, notes: Sequence[str] = ()) -> None:
    """bench/results/answerability.{json,md}: the dev curve, the chosen threshold, the test curve."""
    data = {"chosen_threshold": chosen, "dev": dev, "test": test, "notes": list(notes)}
    out.write_text(json.dumps(data, indent=1) + "\n")
    lines = ["| threshold | dev: gold | unans refused | out-of-KB refused | dev held-out articles: gold "
             "| unans refused | test: gold | unans refused | out-of-KB refused |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for g, tg in zip(dev["grid"], test["grid"], strict=True):
        a, h, t = g["all"], g["held_out_articles"], tg["all"]
        mark = " (chosen on dev)" if g["threshold"] == chosen else ""
        lines.append(f"| {g['threshold']:.2f}{mark} | {a['answered_with_gold']:.3f} | {a['refusal_rate_unanswerable']:.3f} | "
                     f"{a['refusal_rate_out_of_kb']:.3f} | {h['answered_with_gold']:.3f} | {h['refusal_rate_unanswerable']:.3f} | "
                     f"{t['answered_with_gold']:.3f} | {t['refusal_rate_unanswerable']:.3f} | {t['refusal_rate_out_of_kb']:.3f} |")
    out.with_suffix(".md").write_text("\n".join([*notes, "", *lines]) + "\n")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--split", choices=("dev", "test"), default="dev")
    ap.add_argument("--config", type=Path, default=Path("config.toml"))
    ap.add_argument("--squad", type=Path, default=ds.SQUAD_FILE)
    ap.add_argument("--limit", default="600", help="questions per pass ('all' = every question)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--model", type=Path, default=None, help="ONNX model (default: the shipped one)")
    ap.add_argument("--rows", type=Path, default=None, help="JSONL of the run's rows and judge calls (reused if present)")
    ap.add_argument("--rescore", type=Path, default=None,
                    help="score the recorded passages again with this ONNX model (no benchmark run)")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    rows_file = args.rows or Path(f"/tmp/ans/sweep_{args.split}_rows.jsonl")
    out = args.out or RESULTS / f"answerability_sweep_{args.split}.json"
    t0 = time.perf_counter()
    if rows_file.is_file():
        saved = [json.loads(line) for line in rows_file.read_text(encoding="utf-8").splitlines()]
        rows = [s["row"] for s in saved]
        calls = {key(s["row"]["question"]): s["call"] for s in saved if s["call"]}
        if args.rescore:
            judge = OnnxAnswerJudge(args.rescore)
            calls = {q: (passages, judge.score(q, passages)) for q, (passages, _) in calls.items()}
    else:
        config = base_config(args.config)
        recorder = RecordingJudge(OnnxAnswerJudge(args.model) if args.model else OnnxAnswerJudge())
        cands = config.core.judge.candidates
        config = replace(config, core=replace(config.core, judge=JudgeSettings(True, 0.0, cands)))
        bot.app.make_judge = lambda cfg, name: recorder  # type: ignore[assignment]  # the recording wrapper
        rows = []
        limit = None if args.limit == "all" else int(args.limit)
        run_squad_extractive(args.squad, config, limit=limit, seed=args.seed, dump=rows.append,
                             kb_parity=int(args.split == "dev"))
        calls = recorder.calls
        rows_file.parent.mkdir(parents=True, exist_ok=True)
        rows_file.write_text("".join(json.dumps({"row": r, "call": calls.get(key(r["question"]))}, default=str) + "\n"
                                     for r in rows), encoding="utf-8")
    result = {"split": args.split, "seconds": round(time.perf_counter() - t0), "grid": table(rows, calls)}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(" thr | all: gold  unans  out-of-KB | held-out articles: gold  unans")
    for g in result["grid"]:
        a, h = g["all"], g["held_out_articles"]
        print(f"{g['threshold']:.2f} | {a['answered_with_gold']:.3f} {a['refusal_rate_unanswerable']:.3f} "
              f"{a['refusal_rate_out_of_kb']:.3f} | {h['answered_with_gold']:.3f} {h['refusal_rate_unanswerable']:.3f}")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
