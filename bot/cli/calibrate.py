"""`groundbot calibrate EVAL.jsonl`: sweep thresholds, print the trade-off, recommend a setting.

Each line of the eval file is a JSON object: `question`, `expected` ("answer" or "refuse"),
and optionally `answer` (a fixed generator output to verify, e.g. an LLM answer to replay).
Retrieval runs once per question; gates, generation and verification are re-run for every
threshold point with the same core functions the pipeline uses. With `--judge LO:HI:STEP` the
claim judge's floor (`[judge] min_claim_probability`) is swept too, for the replayed (generated)
answers, when the app runs the claim judge (a generated answer on an English knowledge base);
quoted answers are not judged claim by claim. Judge scores are computed once per input and
reused across the grid. The passage reader is not swept (its own benchmark chose its floor).
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from bot.config import Config
from core.gate.similarity_gates import run_gates
from core.generate.extractive import ExtractiveGenerator
from core.messages import Hit
from core.profiles import Profile, load_profile
from core.text.normalize import normalize_text
from core.verify import verify_answer


@dataclass
class EvalItem:
    question: str
    expect_answer: bool
    answer: str | None
    hits: list[Hit]


@dataclass
class Point:
    min_top1: float
    min_support: float
    min_judge: float | None  # the swept claim judge floor; None when it is not swept
    pass_through: float  # expected refusals that were answered
    false_refusal: float  # expected answers that were refused
    n_answer: int
    n_refuse: int

    @property
    def balanced_accuracy(self) -> float:
        return ((1 - self.pass_through) + (1 - self.false_refusal)) / 2


def load_eval(path: Path) -> list[dict[str, Any]]:
    rows = []
    for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        row = json.loads(line)
        if "question" not in row or row.get("expected") not in ("answer", "refuse"):
            raise ValueError(f"{path}:{i}: needs 'question' and 'expected' ('answer' or 'refuse')")
        rows.append(row)
    return rows


class Memo:
    """The claim judge, scoring each distinct input once: the sweep asks the same questions at
    every grid point."""

    def __init__(self, judge: Any) -> None:
        self.judge = judge
        self.seen: dict[tuple[str, tuple[Any, ...]], list[float]] = {}

    def score(self, question: str, items: Sequence[Any]) -> list[float]:
        key = (question, tuple(items))
        if key not in self.seen:
            self.seen[key] = self.judge.score(question, items)
        return self.seen[key]


def decide(item: EvalItem, cfg: Config, generator: Any, point: tuple[float, float, float | None],
           claim_judge: Memo | None = None) -> bool:
    """True when groundbot would reply (not refuse) under these thresholds
    (min_top1, min_support, claim judge floor or None for the configured one)."""
    min_top1, min_support, min_judge = point
    core = cfg.core
    g = run_gates(item.question, item.hits, replace(core.gates, min_top1_similarity=min_top1))
    if not g.passed:
        return False
    if item.answer is None and isinstance(generator, ExtractiveGenerator):
        # a quote is never checked beyond its chunk's similarity: the swept floor is the quote floor too
        generator = ExtractiveGenerator(replace(generator.cfg, min_quote_similarity=min_top1), generator.trust)
    text = item.answer if item.answer is not None else generator.generate(item.question, g.kept).text
    if not text.strip():
        return False
    judge = claim_judge if item.answer is not None and core.judge.claims else None
    floor = core.judge.min_claim_probability if min_judge is None else min_judge
    v = verify_answer(text, item.question, g.kept, replace(core.verify, min_claim_support=min_support), judge, floor)
    return v.status != "REFUSE"


def sweep(items: list[EvalItem], cfg: Config, generator: Any, grids: tuple[list[float], list[float], list[float | None]],
          claim_judge: Memo | None = None) -> list[Point]:
    """Every point of the (min_top1, min_support, claim judge floor) grid, measured on the items."""
    n_ans = sum(1 for it in items if it.expect_answer)
    n_ref = len(items) - n_ans
    points = []
    for t, s, j in itertools.product(*grids):
        replied = [decide(it, cfg, generator, (t, s, j), claim_judge) for it in items]
        pt = sum(1 for it, r in zip(items, replied, strict=True) if r and not it.expect_answer)
        fr = sum(1 for it, r in zip(items, replied, strict=True) if not r and it.expect_answer)
        points.append(Point(t, s, j, pt / n_ref if n_ref else 0.0, fr / n_ans if n_ans else 0.0, n_ans, n_ref))
    return points


def recommend(points: list[Point], max_false_refusal: float) -> Point:
    """Fewest wrong answers among settings within the false-refusal budget (else best balance)."""
    within = [p for p in points if p.false_refusal <= max_false_refusal]
    if within:
        return min(within, key=lambda p: (p.pass_through, p.false_refusal, -p.min_top1))
    return max(points, key=lambda p: p.balanced_accuracy)


def plot(points: list[Point], best: Point, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4.5))
    for s in sorted({p.min_support for p in points}):
        row = sorted((p for p in points if p.min_support == s), key=lambda p: p.false_refusal)
        ax.plot([p.false_refusal for p in row], [p.pass_through for p in row], marker="o", ms=3,
                label=f"min_claim_support={s:.2f}")
    ax.scatter([best.false_refusal], [best.pass_through], s=120, facecolors="none", edgecolors="red",
               label="recommended")
    ax.set_xlabel("false refusal rate (right answers refused)")
    ax.set_ylabel("pass-through (should-refuse answered)")
    ax.set_title("groundbot threshold trade-off")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)


def derive_profile(embedder: str, items: list[EvalItem], floor: float, quoted: bool, source: str) -> Profile:
    """A full threshold profile from one measured point: the recommended floor (the quote floor
    for extractive answers, else the top-1 gate), and the other thresholds carried over from
    minilm's profile by a linear map of the similarity scale anchored at two measured points
    (minilm's floor -> `floor`; minilm's off-topic floor -> the 5th percentile of the top-1
    similarity of the questions that should be refused)."""
    base = load_profile("minilm")
    if base is None:
        raise FileNotFoundError("minilm's threshold profile is missing from core/profiles")
    section, key = ("extractive", "min_quote_similarity") if quoted else ("gates", "min_top1_similarity")
    anchor = base.values[section][key]
    refuse = sorted(max((h.similarity for h in it.hits), default=0.0) for it in items if not it.expect_answer)
    low = refuse[int(0.05 * (len(refuse) - 1))] if refuse else floor - 0.25
    scale = max(0.05, floor - low) / (anchor - base.values["gates"]["offtopic_floor"])

    def mapped(x: float) -> float:
        return round(min(0.99, max(0.0, floor + (x - anchor) * scale)), 3)

    values = {name: {k: mapped(v) for k, v in keys.items()} for name, keys in base.values.items()}
    values[section][key] = round(floor, 3)
    return Profile(embedder, values, source)


def frange(spec: str) -> list[float]:
    lo, hi, step = (float(x) for x in spec.split(":"))
    out, v = [], lo
    while v <= hi + 1e-9:
        out.append(round(v, 4))
        v += step
    return out


def cmd_calibrate(cfg: Config, args: argparse.Namespace) -> int:
    from bot.app import build_app

    path = Path(args.eval_file)
    if not path.is_file():
        print(f"groundbot calibrate: no such file: {path}", file=sys.stderr)
        return 2
    rows = load_eval(path)
    app = build_app(cfg)
    cfg = app.config  # with the embedder's profile applied
    if app.index.count() == 0:
        print("groundbot calibrate: the index is empty; run `groundbot ingest` first", file=sys.stderr)
        return 2
    k = cfg.core.retrieval.top_k
    items = []
    for row in rows:
        q = normalize_text(row["question"])
        hits = app.index.search(q, app.embedder.embed_queries([q])[0], k)
        items.append(EvalItem(row["question"], row["expected"] == "answer", row.get("answer"), hits))
    judge = Memo(app.pipeline.models.claim_judge) if app.pipeline.models.claim_judge is not None else None
    if args.judge and (judge is None or all(it.answer is None for it in items)):
        print("groundbot calibrate: --judge sweeps the claim judge's floor, which only replayed answers meet "
              "and only an app with the claim judge runs ([generator] kind = \"openai\", minilm); it changes "
              "nothing here", file=sys.stderr)
    judge_grid: list[float | None] = [*frange(args.judge)] if args.judge else [None]
    points = sweep(items, cfg, app.pipeline.models.generator, (frange(args.top1), frange(args.support), judge_grid), judge)
    best = recommend(points, args.max_false_refusal)
    quoted = isinstance(app.pipeline.models.generator, ExtractiveGenerator) and any(it.answer is None for it in items)
    notes = sys.stderr if args.json else sys.stdout  # with --json, stdout holds the JSON only
    if args.json:
        print(json.dumps({"points": [_point(p) for p in points], "recommended": _point(best), "quoted": quoted}))
    else:
        report(points, best, cfg, quoted)
    out = Path(args.plot)
    out.parent.mkdir(parents=True, exist_ok=True)
    try:
        plot(points, best, out)
        print(f"plot written to {out}", file=notes)
    except ImportError:
        print("plot skipped: matplotlib is not installed (pip install 'groundbot[plot]')", file=notes)
    if args.write_profile:
        profile = derive_profile(app.embedder.name, items, best.min_top1, quoted,
                                 f"groundbot calibrate {path.name} ({len(items)} questions)")
        Path(args.write_profile).write_text(profile.to_json(), encoding="utf-8")
        print(f"profile for {app.embedder.name} written to {args.write_profile} (copy it to "
              f"core/profiles/{app.embedder.name}.json, or set the thresholds in config.toml)", file=notes)
    return 0


def _point(p: Point) -> dict[str, Any]:
    return p.__dict__ | {"balanced_accuracy": p.balanced_accuracy}


def report(points: list[Point], best: Point, cfg: Config, quoted: bool) -> None:
    """The trade-off table, the recommendation and where the current config lands."""
    print(f"{points[0].n_answer + points[0].n_refuse} questions ({points[0].n_answer} expect an answer, "
          f"{points[0].n_refuse} a refusal)")
    print(f"{'min_top1':>9} {'min_support':>11} {'judge':>6} {'pass_through':>12} {'false_refusal':>13} {'balanced':>9}")
    for p in points:
        mark = "  <- recommended" if p is best else ""
        judge = "-" if p.min_judge is None else f"{p.min_judge:.2f}"
        print(f"{p.min_top1:9.2f} {p.min_support:11.2f} {judge:>6} {p.pass_through:12.3f} {p.false_refusal:13.3f} "
              f"{p.balanced_accuracy:9.3f}{mark}")
    floor = f"{best.min_top1}" + (f" (and [generator] min_quote_similarity = {best.min_top1})" if quoted else "")
    judged = "" if best.min_judge is None else f", [judge] min_claim_probability = {best.min_judge}"
    print(f"\nrecommended: [gates] min_top1_similarity = {floor}, [verify] min_claim_support = "
          f"{best.min_support}{judged} (pass-through {best.pass_through:.3f}, false refusals {best.false_refusal:.3f})")
    configured = cfg.core.extractive.min_quote_similarity if quoted else cfg.core.gates.min_top1_similarity
    configured_judge = cfg.core.judge.min_claim_probability
    current = [p for p in points if abs(p.min_top1 - configured) < 1e-6
               and abs(p.min_support - cfg.core.verify.min_claim_support) < 1e-6
               and (p.min_judge is None or abs(p.min_judge - configured_judge) < 1e-6)]
    if current:
        c = current[0]
        print(f"current config: pass-through {c.pass_through:.3f}, false refusals {c.false_refusal:.3f}")


def register(sub: Any) -> None:
    s = sub.add_parser("calibrate", help="sweep gate/verifier thresholds on an eval file and recommend a setting")
    s.add_argument("eval_file", help="JSONL: question, expected ('answer'|'refuse'), optional answer")
    s.add_argument("--top1", default="0.30:0.60:0.05", help="min_top1_similarity grid LO:HI:STEP")
    s.add_argument("--support", default="0.30:0.80:0.10", help="min_claim_support grid LO:HI:STEP")
    s.add_argument("--judge", default="", metavar="LO:HI:STEP",
                   help="also sweep the claim judge's floor, min_claim_probability, for replayed answers "
                        "(e.g. 0.1:0.9:0.1; the app must run the claim judge: an openai generator, minilm)")
    s.add_argument("--max-false-refusal", type=float, default=0.10, help="false-refusal budget for the recommendation")
    s.add_argument("--plot", default="calibration.png", help="where to write the PNG plot")
    s.add_argument("--json", action="store_true",
                   help="print every point and the recommendation as one JSON object on stdout, instead of the table")
    s.add_argument("--write-profile", default="", metavar="FILE",
                   help="write a threshold profile for the index's embedder (JSON, core/profiles format)")
    s.set_defaults(func=cmd_calibrate)
