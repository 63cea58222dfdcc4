"""Choose the passage reader's two operating points on the dev projects' real questions.

`python -m bench.tuning.real_thresholds CURVES.json [--out bench/results/real-thresholds.md]`

CURVES.json is the per-project curves file the real suite writes beside its result
(`python -m bench.grounding --suites real --real-splits dev --config FLOOR0.toml --out DIR/grounding-real.json`,
FLOOR0.toml setting `[reader] min_answer_probability = 0.0`, so every threshold of the curve is
measured). From the dev projects together:

- the asked point (`[reader] min_answer_probability`): the threshold with the best balance of
  answerable questions answered from their gold section and not-in-docs questions refused (the mean
  of the two shares);
- the unprompted point (`[reader] unprompted_probability`): the lowest threshold at which at least
  `--precision` of the answers posted cite a gold page (posted: answerable or not).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from bench import ROOT

OUT = ROOT / "bench" / "results" / "real-thresholds.md"


def asked_point(points: list[dict[str, Any]]) -> dict[str, Any]:
    """The threshold whose answered-from-section and not-in-docs-refused shares have the best mean."""
    def balance(p: dict[str, Any]) -> float:
        section = p["answered_from_gold_section"] / max(1, p["answerable"])
        refused = 1 - p["not_in_docs_answered"] / max(1, p["not_in_docs"])
        return (section + refused) / 2

    return max(points, key=lambda p: (round(balance(p), 6), -p["threshold"]))


def unprompted_point(points: list[dict[str, Any]], precision: float) -> dict[str, Any] | None:
    """The lowest threshold whose posted answers cite a gold page at least `precision` of the time."""
    for p in sorted(points, key=lambda p: p["threshold"]):
        if p["precision_page"] is not None and p["precision_page"] >= precision:
            return p
    return None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.tuning.real_thresholds", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("curves", type=Path)
    ap.add_argument("--part", default="all dev", help="which curve to choose on (default %(default)r)")
    ap.add_argument("--precision", type=float, default=0.9)
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    data = json.loads(args.curves.read_text("utf-8"))
    curves: dict[str, list[dict[str, Any]]] = data["curves"]
    points = curves[args.part]
    asked, unprompted = asked_point(points), unprompted_point(points, args.precision)
    lines = [f"# Reader thresholds chosen on the real questions' {args.part} projects", "",
             f"From `{args.curves.name}` (code {data.get('code', '?')}); command: "
             f"`python -m bench.tuning.real_thresholds {args.curves}`.", "",
             f"- asked point (`min_answer_probability`): **{asked['threshold']}**",
             f"- unprompted point (`unprompted_probability`, posted answers citing a gold page >= {args.precision}): "
             f"**{unprompted['threshold'] if unprompted else 'none reaches it'}**", "",
             "| part | threshold | answered from gold section | citing a gold page | answerable wrong page | "
             "not in docs answered | precision (page) |", "|---|---:|---:|---:|---:|---:|---:|"]
    for part, pts in curves.items():
        for p in pts:
            lines.append(f"| {part} | {p['threshold']} | {p['answered_from_gold_section']}/{p['answerable']} | "
                         f"{p['answered_citing_gold_page']}/{p['answerable']} | {p['answerable_answered_wrong_page']} | "
                         f"{p['not_in_docs_answered']}/{p['not_in_docs']} | {p['precision_page']} |")
    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines[:6]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
