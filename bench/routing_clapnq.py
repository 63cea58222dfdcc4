"""Risk routing chosen on long-form answers: the CLAPNQ replay's dev records.

    python -m bench.grounding --suites clapnq_llm --dump /tmp/clapnq.jsonl
    python -m bench.routing_clapnq /tmp/clapnq.jsonl --choose   # writes bench/results/routing_choice.json

The clapnq_llm suite records every answer the verifier let through with its risk parts. Its
right answers are what a competent LLM writes (several cited sentences, lightly paraphrased);
its wrong ones are another record's answer, one added sentence and one swapped name or number.
The routes at any threshold follow from the recorded parts without asking again (core.risk's
weights; reply below template_risk, quoted evidence up to hold_risk, held from it). `--choose`
picks, on the dev records (odd index) only, the lowest hold_risk that holds at most BUDGET of the
right answers, the judge's weight and template_risk kept; the test records are reported beside.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from core.risk import WEIGHTS, score_of
from core.settings import ReviewSettings

ROOT = Path(__file__).resolve().parents[1]
BUDGET = 0.05  # right answers held for review, at most
GRID = [round(0.40 + 0.01 * i, 2) for i in range(41)]


def wrong_kept(row: dict[str, Any]) -> bool:
    """The wrong part of an answer survived the verifier (so routing decides whether it reaches a user)."""
    kept = [c["claim"] for c in row["claim_map"] if c["supported"]]
    if row["pass"] == "swapped":
        return any(row["swap_new"] in c for c in kept)
    if row["pass"] == "added":
        added = row.get("added_sentence") or ""
        return any(c[:40] in added for c in kept)
    return row["pass"] == "other" and bool(kept)


def tally(rows: Sequence[dict[str, Any]], hold: float, template: float) -> dict[str, dict[str, float]]:
    """Per pass: the share delivered (reply or quoted), held, and (wrong passes) whose wrong part reaches a user as written."""
    out: dict[str, dict[str, float]] = {}
    for name in ("right", "added", "other", "swapped"):
        rs = [r for r in rows if r["pass"] == name]
        if not rs:
            continue
        routed = [r for r in rs if r.get("risk_parts")]
        risks = [score_of(r["risk_parts"]) for r in routed]
        held = sum(x >= hold for x in risks)
        written = [r for r, x in zip(routed, risks, strict=True) if x < template]
        out[name] = {"n": len(rs), "delivered": round((len(routed) - held) / len(rs), 4),
                     "held": round(held / len(rs), 4),
                     "wrong_reaches_as_written": round(sum(map(wrong_kept, written)) / len(rs), 4)}
    return out


def choose(rows: Sequence[dict[str, Any]], template: float) -> float:
    dev = [r for r in rows if r["split"] == "dev"]
    for hold in GRID:
        if tally(dev, hold, template)["right"]["held"] <= BUDGET:
            return hold
    return GRID[-1]


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.routing_clapnq", description=__doc__.split("\n")[0])
    p.add_argument("rows", type=Path, help="a --dump of bench.grounding with the clapnq_llm suite")
    p.add_argument("--choose", action="store_true", help="choose hold_risk on the dev records and write it")
    p.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "routing_choice.json")
    args = p.parse_args(argv)
    rows = [r for line in args.rows.read_text(encoding="utf-8").splitlines()
            if (r := json.loads(line)).get("suite") == "clapnq_llm"]
    template = ReviewSettings().template_risk
    hold = choose(rows, template) if args.choose else ReviewSettings().hold_risk
    result = {"split": "dev (CLAPNQ dev half, odd records)",
              "command": "python -m bench.routing_clapnq " + " ".join(sys.argv[1:] if argv is None else argv),
              "budget": BUDGET, "judge_weight": WEIGHTS["judge_doubt"], "template_risk": template, "hold_risk": hold,
              "dev": tally([r for r in rows if r["split"] == "dev"], hold, template),
              "test": tally([r for r in rows if r["split"] == "test"], hold, template)}
    print(json.dumps(result, indent=1))
    if args.choose:
        args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
