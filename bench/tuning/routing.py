"""Risk routing on the HaluEval QA replay: where do right and hallucinated answers go?

    python -m bench.tuning.routing --split dev_unseen --forms --choose   # choose the defaults here
    python -m bench.tuning.routing --split test --forms                  # report here
    python -m bench.tuning.routing --split test --rows bench/results/routing_test_rows.jsonl   # re-route, no replay

Every right and every hallucinated HaluEval answer goes through App.ask (bench.grounding's
replay: the real openai client against a local replay server) with routing switched off
(template_risk = hold_risk > 1), so each answer the verifier lets through is recorded with
its risk score. The routes at any thresholds follow from those scores without asking again:
reply below template_risk, template up to hold_risk, hold from it; refused answers stay refused.
The figure to minimise is the share of hallucinated answers that reach a user unreviewed
(replied or quoted); its cost is the share of right answers sent to review. HaluEval records
5000-9999 are never read (bench.datasets stops at line 5000).

Rows keep each answer's risk parts, so a report re-weighs them with core.turn.risk's current WEIGHTS.
`--choose` picks, on a dev split only, the claim judge's weight and the thresholds: the fewest
hallucinated answers unreviewed with at most BUDGET of right answers held, then the lowest
template_risk with at most TEMPLATE_BUDGET of right answers not sent as written
(bench/results/routing_choice.json; core/turn/risk.py and core/settings.py carry the result).
dev_unseen is the dev records the claim judge was not trained on, where its scores are honest.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench import RESULTS, ROOT
from bench import datasets as ds
from bench.grounding.run import run_halueval
from bench.history import record
from bot.config import load_config
from core.settings import ReviewSettings
from core.turn.risk import WEIGHTS, score_of

OFF = 1.01  # above any risk: nothing is templated or held while measuring
GRID = [round(0.05 * i, 2) for i in range(21)]
FINE = [round(0.01 * i, 2) for i in range(101)]
JUDGE_WEIGHTS = (0.15, 0.3, 0.6, 1.0, 2.0)  # the claim judge's weight in the risk score, tried by --choose
BUDGET = 0.05  # at most this share of right answers sent to review
TEMPLATE_BUDGET = 0.10  # at most this share of right answers quoted or held instead of sent as written


def route(row: dict[str, Any], template: float, hold: float) -> str:
    if row["route"] == "refuse" or row["risk"] is None:
        return "refuse"
    risk = float(row["risk"])
    return "hold" if risk >= hold else "template" if risk >= template else "reply"


RIGHT = ("right", "right_template", "right_sentence")  # the right answer bare, "The answer is X.", a sentence


def group(row: dict[str, Any]) -> str:
    return "hallucinated" if row["pass"] == "hallucinated" else "right"


def distribution(rows: Sequence[dict[str, Any]], template: float, hold: float) -> dict[str, dict[str, float]]:
    """Share of each pass's answers per route ("right": every form of the right answer asked;
    "right_bare", "right_template", "right_sentence": each form alone)."""
    out: dict[str, dict[str, float]] = {}
    names: dict[str, tuple[str, ...]] = {"right": RIGHT, "hallucinated": ("hallucinated",)}
    if any(r["pass"] in RIGHT[1:] for r in rows):
        names |= {("right_bare" if k == "right" else k): (k,) for k in RIGHT}
    for name, passes in names.items():
        mine = [r for r in rows if r["pass"] in passes]
        counts = {k: 0 for k in ("reply", "template", "hold", "refuse")}
        for r in mine:
            counts[route(r, template, hold)] += 1
        out[name] = {k: round(v / len(mine), 4) if mine else 0.0 for k, v in counts.items()} | {"n": len(mine)}
    return out


def curve(rows: Sequence[dict[str, Any]], template: float) -> list[dict[str, float]]:
    """The trade-off as hold_risk moves (template_risk fixed, or equal to hold_risk when above it)."""
    points = []
    for hold in GRID:
        d = distribution(rows, min(template, hold), hold)
        points.append({"hold_risk": hold,
                       "hallucinated_unreviewed": round(d["hallucinated"]["reply"] + d["hallucinated"]["template"], 4),
                       "hallucinated_replied_as_written": d["hallucinated"]["reply"],
                       "right_sent_to_review": d["right"]["hold"],
                       "right_unreviewed": round(d["right"]["reply"] + d["right"]["template"], 4)})
    return points


def rescored(rows: Sequence[dict[str, Any]], weights: dict[str, float] | None = None) -> list[dict[str, Any]]:
    """The rows with their risk re-weighed from the recorded parts (core.turn.risk.WEIGHTS by default)."""
    return [r | {"risk": None if r["risk"] is None else score_of(r["risk_parts"], weights)} for r in rows]


def choose(rows: Sequence[dict[str, Any]], budget: float = BUDGET,
           template_budget: float = TEMPLATE_BUDGET) -> dict[str, Any]:
    """The judge weight and hold_risk letting the fewest hallucinated answers through unreviewed
    with at most `budget` of right answers held (ties: fewer held, then the lower weight and
    threshold); then the lowest template_risk with at most `template_budget` of right answers
    quoted or held."""
    best: tuple[tuple[float, float], float, float] | None = None
    per_weight = {}
    for w in JUDGE_WEIGHTS:
        scored = rescored(rows, WEIGHTS | {"judge_doubt": w})
        mine: tuple[tuple[float, float], float, float] | None = None
        for hold in FINE:
            d = distribution(scored, hold, hold)
            key = (round(d["hallucinated"]["reply"] + d["hallucinated"]["template"], 4), d["right"]["hold"])
            if d["right"]["hold"] <= budget and (mine is None or key < mine[0]):
                mine = (key, w, hold)
        if mine is not None:
            per_weight[str(w)] = {"hold_risk": mine[2], "hallucinated_unreviewed": mine[0][0],
                                  "right_sent_to_review": mine[0][1]}
            best = mine if best is None or mine[0] < best[0] else best
    if best is None:
        raise SystemExit(f"bench.tuning.routing: no threshold holds at most {budget} of right answers")
    _, weight, hold = best
    scored = rescored(rows, WEIGHTS | {"judge_doubt": weight})
    template = next(t for t in FINE if t >= hold or 1 - distribution(scored, t, hold)["right"]["reply"]
                    - distribution(scored, t, hold)["right"]["refuse"] <= template_budget)
    return {"budget": budget, "template_budget": template_budget, "judge_weight": weight,
            "template_risk": min(template, hold), "hold_risk": hold, "best_per_judge_weight": per_weight,
            "at_choice": distribution(scored, min(template, hold), hold)}


def measure(split: str, limit: int | None, halueval: Path, forms: bool) -> list[dict[str, Any]]:
    cfg = load_config(ROOT / "config.toml", environ={})
    cfg = cfg.changed(review=ReviewSettings(template_risk=OFF, hold_risk=OFF))
    rows: list[dict[str, Any]] = []
    result = run_halueval(halueval, cfg, limit=limit, split=split, dump=rows.append, forms=forms)
    if result.skipped:
        raise SystemExit(f"bench.tuning.routing: {result.skipped}")
    return rows


def write(rows: list[dict[str, Any]], split: str, out: Path, command: str) -> dict[str, Any]:
    d = ReviewSettings()
    rows = rescored(rows)
    report = {
        "split": split, "defaults": {"template_risk": d.template_risk, "hold_risk": d.hold_risk},
        "weights": dict(WEIGHTS),
        "at_defaults": distribution(rows, d.template_risk, d.hold_risk),
        "curve_template_at_default": curve(rows, d.template_risk),
        "risk_quantiles": {name: _quantiles([float(r["risk"]) for r in rows if r["pass"] == name and r["risk"] is not None])
                           for name in (*RIGHT, "hallucinated")},
        "command": command,
    }
    out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    at = report["at_defaults"]
    record(out.stem, {f"{form}.{route}": at[form][route] for form in at for route in ("reply", "template", "hold", "refuse")
                      if route in at[form]}, command.removeprefix("python -m bench.tuning.routing").strip())
    return report


def _quantiles(values: list[float]) -> dict[str, float]:
    values = sorted(values)
    if not values:
        return {}
    return {f"p{q}": round(values[min(len(values) - 1, int(q / 100 * len(values)))], 4) for q in (10, 25, 50, 75, 90)}


def _kept(row: dict[str, Any]) -> dict[str, Any]:
    """What a routing row keeps of bench.grounding's row: the route, the risk and its parts, and
    per claim its lexical support and the claim judge's probability."""
    keep = ("pass", "index", "route", "risk", "risk_parts", "refused", "refusal_reason", "status")
    claims = [{k: c.get(k) for k in ("support", "judge", "supported")} for c in row.get("claim_map") or []]
    return {k: row.get(k) for k in keep} | {"claims": claims}


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.tuning.routing", description=__doc__.splitlines()[0])
    p.add_argument("--split", choices=("dev", "dev_unseen", "test"), default="test",
                   help="dev_unseen: the dev records the claim judge was not trained on")
    p.add_argument("--forms", action="store_true", help="replay the right answers restated too (bench.grounding --forms)")
    p.add_argument("--limit", type=int, default=None, help="questions per pass (default: the whole split)")
    p.add_argument("--halueval", type=Path, default=ds.HALUEVAL_FILE)
    p.add_argument("--rows", type=Path, default=None, help="reuse rows written by an earlier run (JSONL)")
    p.add_argument("--choose", action="store_true", help="choose the judge weight and thresholds (dev splits only)")
    args = p.parse_args(argv)
    rows_path = args.rows or RESULTS / f"routing_{args.split}_rows.jsonl"
    if args.rows:
        rows = [json.loads(line) for line in args.rows.read_text(encoding="utf-8").splitlines() if line.strip()]
    else:
        rows = [_kept(r) for r in measure(args.split, args.limit, args.halueval, args.forms)]
        rows_path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    command = " ".join(["python -m bench.tuning.routing", *(argv if argv is not None else sys.argv[1:])])
    if args.choose:
        if args.split == "test":
            raise SystemExit("bench.tuning.routing: --choose reads a dev split only")
        choice = {"split": args.split, "command": command} | choose(rows)
        (RESULTS / "routing_choice.json").write_text(json.dumps(choice, indent=2) + "\n", encoding="utf-8")
        record("routing_choice", {k: choice[k] for k in ("judge_weight", "template_risk", "hold_risk")},
               f"bench.tuning.routing --choose on {args.split}")
        json.dump({k: choice[k] for k in ("judge_weight", "template_risk", "hold_risk")}, sys.stdout)
        print()
    report = write(rows, args.split, RESULTS / f"routing_{args.split}.json", command)
    json.dump(report["at_defaults"], sys.stdout, indent=2)
    print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
