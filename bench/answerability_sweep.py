"""Where should the answerability judge's threshold sit? One benchmark run, every setting simulated.

    python -m bench.answerability_sweep --split dev        # choose on dev (odd-index articles are the KB)
    python -m bench.answerability_sweep --split test       # the same curve on the test half

Runs the SQuAD extractive suite of bench.grounding once, through App.ask like a chat message,
with the judge accepting everything (min_answer_probability 0), reading `--candidates` lexical
candidates, and the quote floor lowered to `--floor`. A recording wrapper around the real judge
(storage/answer_judge.py) keeps what it read and the probabilities it gave. From those, the
outcome of every (quote floor, candidates, threshold) setting at or above the run's is replayed
exactly as core/extractive.py decides it (`accepted`): a question is refused when its best
chunk is below the floor or no candidate reaches the threshold, else the accepted sentences
are quoted and the reply holds the gold answer when one of them does. Refusals the run made
elsewhere (gates, verifier) stay refusals.

On dev, articles 1 and 11 were held out of the judge's training (bench/train_answerability.py)
and the other odd-index articles were trained on; the figures are given for both, and the
threshold should be chosen on the held-out ones. Writes `--out` (JSON) and prints a table.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import bot.app
from bench import datasets as ds
from bench.grounding import base_config, run_squad_extractive
from bench.harness import contains_gold
from bench.train_answerability import SQUAD_HELD_OUT
from core.extractive import accepted
from core.settings import JudgeSettings
from storage.answer_judge import OnnxAnswerJudge

RESULTS = Path(__file__).resolve().parent / "results"
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


def outcome(row: dict[str, Any], call: tuple[list[str], list[float]] | None, floor: float, k: int, t: float,
            max_sentences: int) -> tuple[bool, bool]:
    """(replied, replied with the gold answer) of one question under a setting."""
    if row["refused"] and row["refusal_reason"] != "NOT_ANSWERED_BY_SOURCES":
        return False, False
    if (row["scores"].get("top1_similarity") or 0.0) < floor or call is None:
        return False, False
    passages, probs = call[0][:k], call[1][:k]
    cands = [(0.0, 0, i, sentence_of(p)) for i, p in enumerate(passages)]
    chosen = accepted(cands, probs, t, max_sentences)
    if not chosen:
        return False, False
    return True, contains_gold(" ".join(c[3] for c in chosen), row["gold"])


def held_out(row: dict[str, Any]) -> bool:
    return any(f"/{a:02d}-" in (row.get("gold_doc") or "") for a in SQUAD_HELD_OUT)


def table(rows: list[dict[str, Any]], calls: dict[str, Any], floors: Sequence[float], ks: Sequence[int],
          max_sentences: int) -> list[dict[str, Any]]:
    out = []
    for floor in floors:
        for k in ks:
            for t in THRESHOLDS:
                res: dict[str, Any] = {"floor": floor, "candidates": k, "threshold": t}
                for subset, keep in (("all", lambda r: True), ("held_out_articles", held_out)):
                    by = {p: [r for r in rows if r["pass"] == p and (p == "out_of_kb" or keep(r))]
                          for p in ("answerable", "unanswerable", "out_of_kb")}
                    got = {p: [outcome(r, calls.get(key(r["question"])), floor, k, t, max_sentences) for r in rs]
                           for p, rs in by.items()}
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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--split", choices=("dev", "test"), default="dev")
    ap.add_argument("--config", type=Path, default=Path("config.toml"))
    ap.add_argument("--squad", type=Path, default=ds.SQUAD_FILE)
    ap.add_argument("--limit", default="600", help="questions per pass ('all' = every question)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--floor", type=float, default=0.35, help="quote floor of the run (the lowest simulated)")
    ap.add_argument("--floors", default="0.35,0.4,0.45")
    ap.add_argument("--candidates", type=int, default=6, help="candidates judged in the run (the most simulated)")
    ap.add_argument("--model", type=Path, default=None, help="ONNX model (default: the shipped one)")
    ap.add_argument("--rows", type=Path, default=None, help="JSONL of the run's rows and judge calls (reused if present)")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    rows_file = args.rows or Path(f"/tmp/ans/sweep_{args.split}_rows.jsonl")
    out = args.out or RESULTS / f"answerability_sweep_{args.split}.json"
    config = base_config(args.config)
    t0 = time.perf_counter()
    if rows_file.is_file():
        saved = [json.loads(line) for line in rows_file.read_text(encoding="utf-8").splitlines()]
        rows = [s["row"] for s in saved]
        calls = {key(s["row"]["question"]): s["call"] for s in saved if s["call"]}
    else:
        judge = RecordingJudge(OnnxAnswerJudge(args.model) if args.model else OnnxAnswerJudge())
        ext = replace(config.core.extractive, min_quote_similarity=args.floor)
        core = replace(config.core, extractive=ext, judge=JudgeSettings(True, 0.0, args.candidates))
        config = replace(config, core=core)
        if hasattr(config, "threshold_overrides"):  # explicit values win over the embedder's profile
            overrides = {**config.threshold_overrides}
            overrides["extractive"] = {**overrides.get("extractive", {}), "min_quote_similarity": args.floor}
            config = replace(config, threshold_overrides=overrides)
        bot.app.make_judge = lambda cfg, name: judge  # type: ignore[assignment]  # the recording wrapper
        rows = []
        limit = None if args.limit == "all" else int(args.limit)
        run_squad_extractive(args.squad, config, limit=limit, seed=args.seed, dump=rows.append,
                             kb_parity=int(args.split == "dev"))
        calls = judge.calls
        rows_file.parent.mkdir(parents=True, exist_ok=True)
        rows_file.write_text("".join(json.dumps({"row": r, "call": calls.get(key(r["question"]))}, default=str) + "\n"
                                     for r in rows), encoding="utf-8")
    floors = [float(f) for f in args.floors.split(",") if float(f) >= args.floor]
    ks = [k for k in (2, 3, 4, 6) if k <= args.candidates]
    result = {"split": args.split, "run_floor": args.floor, "run_candidates": args.candidates,
              "max_sentences": config.core.extractive.max_sentences, "seconds": round(time.perf_counter() - t0),
              "grid": table(rows, calls, floors, ks, config.core.extractive.max_sentences)}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    print("floor  k  thr | all: gold  unans  oos | held-out articles: gold  unans")
    for g in result["grid"]:
        a, h = g["all"], g["held_out_articles"]
        print(f"{g['floor']:.2f} {g['candidates']:2d} {g['threshold']:.2f} | {a['answered_with_gold']:.3f} "
              f"{a['refusal_rate_unanswerable']:.3f} {a['refusal_rate_out_of_kb']:.3f} | "
              f"{h['answered_with_gold']:.3f} {h['refusal_rate_unanswerable']:.3f}")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
