"""Risk routing chosen on long-form answers (the CLAPNQ replay) and HaluEval's three forms.

    python -m bench.grounding --suites clapnq_llm,halueval --forms --split dev --limit 300 \
        --config ROUTING_OFF.toml --dump /tmp/rows.jsonl       # template_risk = hold_risk = 1.01
    python -m bench.tuning.routing_clapnq /tmp/rows.jsonl --choose    # writes bench/results/routing_choice.json

The clapnq_llm suite records every answer the verifier let through with its risk parts. Its
right answers are what a competent LLM writes (several cited sentences, lightly paraphrased);
its wrong ones are another record's answer, one added sentence and one swapped name or number.
The routes at any threshold follow from the recorded parts without asking again (core.turn.risk's
weights; reply below template_risk, quoted evidence up to hold_risk, held from it). `--choose`
picks, on dev records only (CLAPNQ odd records, HaluEval dev records), the claim judge's weight
and hold_risk that hold the fewest HaluEval right answers (all three forms) while holding at most
BUDGET of CLAPNQ's right answers and letting at most BUDGET of HaluEval's hallucinated answers
through; template_risk is kept. CLAPNQ's test records are reported beside.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench import ROOT
from bench.history import record
from core.settings import ReviewSettings
from core.turn.risk import WEIGHTS, score_of

BUDGET = 0.05  # right answers held for review, at most
HOLDS = [round(0.40 + 0.05 * i, 2) for i in range(9)]
JUDGE_WEIGHTS = (0.5, 1.0, 2.0, 3.0)
HALUEVAL_RIGHT = ("right", "right_template", "right_sentence")


def wrong_kept(row: dict[str, Any]) -> bool:
    """The wrong part of an answer survived the verifier (so routing decides whether it reaches a user)."""
    kept = [c["claim"] for c in row["claim_map"] if c["supported"]]
    if row["pass"] == "swapped":
        return any(row["swap_new"] in c for c in kept)
    if row["pass"] == "added":
        added = row.get("added_sentence") or ""
        return any(c[:40] in added for c in kept)
    return row["pass"] == "other" and bool(kept)


def tally(rows: Sequence[dict[str, Any]], hold: float, template: float,
          weights: dict[str, float] | None = None) -> dict[str, dict[str, float]]:
    """Per pass: the share delivered (reply or quoted), held, and (wrong passes) whose wrong part reaches a user as written."""
    out: dict[str, dict[str, float]] = {}
    for name in ("right", "added", "other", "swapped"):
        rs = [r for r in rows if r["pass"] == name]
        if not rs:
            continue
        routed = [r for r in rs if r.get("risk_parts")]
        risks = [score_of(r["risk_parts"], weights) for r in routed]
        held = sum(x >= hold for x in risks)
        written = [r for r, x in zip(routed, risks, strict=True) if x < template]
        out[name] = {"n": len(rs), "delivered": round((len(routed) - held) / len(rs), 4),
                     "held": round(held / len(rs), 4),
                     "wrong_reaches_as_written": round(sum(map(wrong_kept, written)) / len(rs), 4)}
    return out


def halueval(rows: Sequence[dict[str, Any]], hold: float, weights: dict[str, float] | None = None) -> dict[str, float]:
    """HaluEval: per right form the share not sent (refused or held), and the hallucinated share sent."""
    out: dict[str, float] = {}
    for name in (*HALUEVAL_RIGHT, "hallucinated"):
        rs = [r for r in rows if r["pass"] == name]
        sent = sum(1 for r in rs if r.get("risk_parts") and score_of(r["risk_parts"], weights) < hold)
        out[name] = round((sent if name == "hallucinated" else len(rs) - sent) / len(rs), 4) if rs else 0.0
    return out


def choose(clapnq: Sequence[dict[str, Any]], halu: Sequence[dict[str, Any]], template: float) -> tuple[float, float]:
    """(judge weight, hold_risk) on the dev rows, by the rule in the module docstring."""
    best: tuple[float, float, float] | None = None
    for jw in JUDGE_WEIGHTS:
        weights = WEIGHTS | {"judge_doubt": jw}
        for hold in HOLDS:
            h = halueval(halu, hold, weights)
            if tally(clapnq, hold, template, weights)["right"]["held"] > BUDGET or h["hallucinated"] > BUDGET:
                continue
            cost = sum(h[f] for f in HALUEVAL_RIGHT)
            if best is None or cost < best[0]:
                best = (cost, jw, hold)
    if best is None:
        raise SystemExit("no judge weight and hold_risk meet both budgets on these rows")
    return best[1], best[2]


def curve(clapnq: Sequence[dict[str, Any]], halu: Sequence[dict[str, Any]], template: float) -> list[dict[str, float]]:
    """The trade-off behind the choice: every judge weight and hold_risk tried, on the dev rows."""
    out = []
    for jw in JUDGE_WEIGHTS:
        weights = WEIGHTS | {"judge_doubt": jw}
        for hold in HOLDS:
            t, h = tally(clapnq, hold, template, weights), halueval(halu, hold, weights)
            out.append({"judge_weight": jw, "hold_risk": hold, "clapnq_right_held": t["right"]["held"],
                        "clapnq_right_delivered": t["right"]["delivered"],
                        "clapnq_swapped_reaches": t.get("swapped", {}).get("wrong_reaches_as_written", 0.0),
                        **{f"halueval_{k}": v for k, v in h.items()}})
    return out


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.tuning.routing_clapnq", description=__doc__.split("\n")[0])
    p.add_argument("rows", type=Path, help="a --dump of bench.grounding with the clapnq_llm and halueval (--forms) suites")
    p.add_argument("--choose", action="store_true", help="choose hold_risk on the dev records and write it")
    p.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "routing_choice.json")
    args = p.parse_args(argv)
    rows = [json.loads(line) for line in args.rows.read_text(encoding="utf-8").splitlines()]
    clap = [r for r in rows if r.get("suite") == "clapnq_llm"]
    halu = [r for r in rows if r.get("suite") == "halueval"]
    template = ReviewSettings().template_risk
    jw, hold = choose([r for r in clap if r["split"] == "dev"], halu, template) if args.choose else (
        WEIGHTS["judge_doubt"], ReviewSettings().hold_risk)
    weights = WEIGHTS | {"judge_doubt": jw}
    result = {"split": "dev (CLAPNQ dev half, odd records; HaluEval dev records)",
              "command": "python -m bench.tuning.routing_clapnq " + " ".join(sys.argv[1:] if argv is None else argv),
              "budget": BUDGET, "judge_weight": jw, "template_risk": template, "hold_risk": hold,
              "clapnq_dev": tally([r for r in clap if r["split"] == "dev"], hold, template, weights),
              "clapnq_test": tally([r for r in clap if r["split"] == "test"], hold, template, weights),
              "halueval": halueval(halu, hold, weights),
              "rows": args.rows.name,
              "curve": curve([r for r in clap if r["split"] == "dev"], halu, template)}
    print(json.dumps({k: v for k, v in result.items() if k != "curve"}, indent=1))
    if args.choose:
        args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
        record(args.out.stem, headline(result), f"bench.tuning.routing_clapnq --choose on {args.rows.name}")
    return 0


def headline(result: dict[str, Any]) -> dict[str, float]:
    """The chosen weight and thresholds, and what they do on the dev records."""
    dev = result["clapnq_dev"]
    return {"judge_weight": result["judge_weight"], "template_risk": result["template_risk"],
            "hold_risk": result["hold_risk"], "clapnq_dev.right.delivered": dev["right"]["delivered"],
            "clapnq_dev.right.held": dev["right"]["held"],
            "clapnq_dev.swapped.wrong_reaches_as_written": dev["swapped"]["wrong_reaches_as_written"],
            **{f"halueval.{k}": v for k, v in result["halueval"].items()}}


if __name__ == "__main__":
    sys.exit(main())
