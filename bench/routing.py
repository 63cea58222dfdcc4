"""Risk routing on the HaluEval QA replay: where do right and hallucinated answers go?

    python -m bench.routing --split dev     # choose thresholds here
    python -m bench.routing --split test    # report here (the default split of bench.grounding)

Every right and every hallucinated HaluEval answer goes through App.ask (bench.grounding's
replay: the real openai client against a local replay server) with routing switched off
(template_risk = hold_risk > 1), so each answer the verifier lets through is recorded with
its risk score. The routes at any thresholds follow from those scores without asking again:
reply below template_risk, template up to hold_risk, hold from it; refused answers stay refused.
The figure to minimise is the share of hallucinated answers that reach a user unreviewed
(replied or quoted); its cost is the share of right answers sent to review. HaluEval records
5000-9999 are never read (bench.datasets stops at line 5000).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from bench import datasets as ds
from bench.grounding import run_halueval
from bot.config import load_config
from core.settings import ReviewSettings

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
OFF = 1.01  # above any risk: nothing is templated or held while measuring
GRID = [round(0.05 * i, 2) for i in range(21)]


def route(row: dict[str, Any], template: float, hold: float) -> str:
    if row["route"] == "refuse" or row["risk"] is None:
        return "refuse"
    risk = float(row["risk"])
    return "hold" if risk >= hold else "template" if risk >= template else "reply"


def distribution(rows: Sequence[dict[str, Any]], template: float, hold: float) -> dict[str, dict[str, float]]:
    """Share of each pass's answers per route."""
    out: dict[str, dict[str, float]] = {}
    for name in ("right", "hallucinated"):
        mine = [r for r in rows if r["pass"] == name]
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


def measure(split: str, limit: int | None, halueval: Path) -> list[dict[str, Any]]:
    cfg = load_config(ROOT / "config.toml", environ={})
    cfg = replace(cfg, core=replace(cfg.core, review=ReviewSettings(template_risk=OFF, hold_risk=OFF)))
    rows: list[dict[str, Any]] = []
    result = run_halueval(halueval, cfg, limit=limit, split=split, dump=rows.append)
    if result.skipped:
        raise SystemExit(f"bench.routing: {result.skipped}")
    return rows


def write(rows: list[dict[str, Any]], split: str, out: Path, limit: int | None = None) -> dict[str, Any]:
    d = ReviewSettings()
    report = {
        "split": split, "defaults": {"template_risk": d.template_risk, "hold_risk": d.hold_risk},
        "at_defaults": distribution(rows, d.template_risk, d.hold_risk),
        "curve_template_at_default": curve(rows, d.template_risk),
        "risk_quantiles": {name: _quantiles([float(r["risk"]) for r in rows if r["pass"] == name and r["risk"] is not None])
                           for name in ("right", "hallucinated")},
        "command": f"python -m bench.routing --split {split}" + (f" --limit {limit}" if limit else ""),
    }
    out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return report


def _quantiles(values: list[float]) -> dict[str, float]:
    values = sorted(values)
    if not values:
        return {}
    return {f"p{q}": round(values[min(len(values) - 1, int(q / 100 * len(values)))], 4) for q in (10, 25, 50, 75, 90)}


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.routing", description=__doc__.splitlines()[0])
    p.add_argument("--split", choices=("dev", "test"), default="test")
    p.add_argument("--limit", type=int, default=None, help="questions per pass (default: the whole split)")
    p.add_argument("--halueval", type=Path, default=ds.HALUEVAL_FILE)
    p.add_argument("--rows", type=Path, default=None, help="reuse rows written by an earlier run (JSONL)")
    args = p.parse_args(argv)
    rows_path = args.rows or RESULTS / f"routing_{args.split}_rows.jsonl"
    if args.rows:
        rows = [json.loads(line) for line in args.rows.read_text(encoding="utf-8").splitlines() if line.strip()]
    else:
        rows = measure(args.split, args.limit, args.halueval)
        keep = ("pass", "index", "route", "risk", "risk_parts", "refused", "refusal_reason", "status")
        rows_path.write_text("".join(json.dumps({k: r.get(k) for k in keep}) + "\n" for r in rows), encoding="utf-8")
    report = write(rows, args.split, RESULTS / f"routing_{args.split}.json", args.limit)
    json.dump(report["at_defaults"], sys.stdout, indent=2)
    print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
