"""Does every exact guard of the verifier earn its place? Measured on captured dev turns.

    python -m bench.tuning.verify_rows capture /tmp/rows.pkl
    python -m bench.tuning.guards /tmp/rows.pkl    # dev parts: bench/results/guards.json; --split test: guards-test.json

Each claim of a captured answer gets a label from its suite: right (a CLAPNQ right answer's
sentence, a HaluEval right answer in any form, an ExpertQA claim the expert found fully
supported) or wrong (another record's answer, the added sentence, the sentence with a swapped
name or number, a HaluEval hallucination, an ExpertQA claim partially supported or without
evidence). For each guard (core.verify.claim_checks.CHECKS but the claim judge, and the exact check
that a claim's names and numbers are in its evidence at all) the verifier runs with and without
it:
- right rejected alone: right claims supported without the guard and not with it (its cost);
- wrong caught alone: wrong claims supported without it and not with it (what only it catches);
- flagged: claims it marks on its own (lexical checks only, no judge), right and wrong.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import core.verify.claim_checks as checks_module
import core.verify.rules as rules_module
from bench import RESULTS
from bench.grounding.clapnq import contains_text
from bench.history import record
from bench.tuning.verify_rows import Captured, as_asked, default_core, load_all
from core.ports import ClaimJudge
from core.settings import CoreSettings
from core.verify import verify_answer

EXACT = "exact_tokens"  # a claim's names and numbers must be in its evidence (map_claim)


def guard_names() -> list[str]:
    return [c.__name__ for c in checks_module.CHECKS if c.__name__ != "judged"] + [EXACT]


@contextmanager
def without(names: Sequence[str], keep_only: bool = False) -> Iterator[None]:
    """The verifier without the named guards (or with only them, when `keep_only`)."""
    original, tokens = rules_module.CHECKS, checks_module.critical_tokens
    if keep_only:
        rules_module.CHECKS = tuple(c for c in original if c.__name__ in names)  # type: ignore[misc]
    else:
        rules_module.CHECKS = tuple(c for c in original if c.__name__ not in names)  # type: ignore[misc]
    if (EXACT in names) != keep_only:
        checks_module.critical_tokens = lambda text: []  # type: ignore[assignment]
    try:
        yield
    finally:
        rules_module.CHECKS = original  # type: ignore[misc]
        checks_module.critical_tokens = tokens


def claim_label(c: Captured, claim: str) -> str | None:
    """right / wrong / None (no label) for one claim of a captured answer."""
    if c.suite == "halueval":
        return "wrong" if c.pass_name == "hallucinated" else "right"
    if c.suite == "clapnq_llm":
        if c.pass_name == "other":
            return "wrong"
        if c.pass_name == "added":
            added = c.labels.get("added_sentence", "")
            return "wrong" if contains_text(added, claim) or contains_text(claim, added) else "right"
        if c.pass_name == "swapped":
            return "wrong" if contains_text(claim, c.labels.get("swap_new", "")) else "right"
        return "right"
    for ex in c.labels.get("claims", []):
        if contains_text(ex["text"], claim):
            return {"complete": "right", "partial": "wrong", "uncited": "wrong"}.get(ex["label"])
    return None


def supported(rows: Sequence[Captured], core: CoreSettings, judge: ClaimJudge | None) -> list[list[bool]]:
    """Per row, per claim: does the verifier support it (rows that never reached it: none)."""
    out: list[list[bool]] = []
    for c in rows:
        if c.gate is None or c.generation is None:
            out.append([])
            continue
        v = verify_answer(c.generation.text, c.question, c.gate.kept, as_asked(c, core).verify, judge,
                          core.judge.min_claim_probability)
        out.append([bool(m.supported) for m in v.claim_map])
    return out


def claims_of(rows: Sequence[Captured], core: CoreSettings) -> list[list[str]]:
    out: list[list[str]] = []
    for c in rows:
        if c.gate is None or c.generation is None:
            out.append([])
            continue
        v = verify_answer(c.generation.text, c.question, c.gate.kept, as_asked(c, core).verify, None, 0.0)
        out.append([m.claim for m in v.claim_map])
    return out


def tally(rows: Sequence[Captured], labels: list[list[str | None]], before: list[list[bool]],
          after: list[list[bool]], pick: Callable[[bool, bool], bool]) -> dict[str, dict[str, int]]:
    """Per suite, right and wrong claims for which pick(supported with, supported without) holds."""
    out: dict[str, dict[str, int]] = {}
    for c, ls, b, a in zip(rows, labels, before, after, strict=True):
        for label, x, y in zip(ls, b, a, strict=False):
            if label is not None and pick(x, y):
                d = out.setdefault(c.suite, {"right": 0, "wrong": 0})
                d[label] += 1
    return out


def measure(rows: Sequence[Captured], core: CoreSettings, judge: ClaimJudge | None) -> dict[str, Any]:
    claims = claims_of(rows, core)
    labels = [[claim_label(c, t) for t in ts] for c, ts in zip(rows, claims, strict=True)]
    totals: dict[str, dict[str, int]] = {}
    for c, ls in zip(rows, labels, strict=True):
        for label in ls:
            if label is not None:
                d = totals.setdefault(c.suite, {"right": 0, "wrong": 0})
                d[label] += 1
    full = supported(rows, core, judge)
    with without([], keep_only=True):
        bare = supported(rows, core, None)
    report: dict[str, Any] = {"claims": totals, "guards": {}}
    for name in guard_names():
        with without([name]):
            off = supported(rows, core, judge)
        with without([name], keep_only=True):
            only = supported(rows, core, None)
        report["guards"][name] = {
            "rejects_alone": tally(rows, labels, full, off, lambda w, wo: not w and wo),
            "flagged": tally(rows, labels, bare, only, lambda w, wo: w and not wo),
        }
        print(name, json.dumps(report["guards"][name]), flush=True)
    return report


def markdown(report: dict[str, Any]) -> list[str]:
    lines = ["| guard | right rejected alone (ExpertQA / CLAPNQ / HaluEval) | wrong caught alone | right flagged | "
             "wrong flagged |", "|---|---|---|---|---|"]
    suites = ("expertqa", "clapnq_llm", "halueval")

    def cell(d: dict[str, dict[str, int]], label: str) -> str:
        return " / ".join(str(d.get(s, {}).get(label, 0)) for s in suites)

    for name, g in report["guards"].items():
        lines.append(f"| {name} | {cell(g['rejects_alone'], 'right')} | {cell(g['rejects_alone'], 'wrong')} "
                     f"| {cell(g['flagged'], 'right')} | {cell(g['flagged'], 'wrong')} |")
    lines.append(f"| claims (right / wrong) | {' / '.join(str(report['claims'].get(s, {}).get('right', 0)) for s in suites)} "
                 f"| {' / '.join(str(report['claims'].get(s, {}).get('wrong', 0)) for s in suites)} | | |")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.tuning.guards", description=__doc__.split("\n")[0])
    p.add_argument("rows", help="rows captured by python -m bench.tuning.verify_rows capture (several: comma-separated)")
    p.add_argument("--split", default="dev", choices=("dev", "test"))
    p.add_argument("--out", type=Path, default=None, help="JSON file; the Markdown table goes next to it "
                                                          "(default bench/results/guards.json, guards-test.json)")
    args = p.parse_args(argv)
    rows = [c for c in load_all(args.rows) if c.split == args.split]
    core, judge = default_core()
    report = measure(rows, core, judge) | {"split": args.split, "rows": len(rows)}
    table = markdown(report)
    print("\n".join(table))
    out = args.out or RESULTS / ("guards.json" if args.split == "dev" else f"guards-{args.split}.json")
    out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    out.with_suffix(".md").write_text("\n".join(table) + "\n", encoding="utf-8")
    record(out.stem, headline(report), f"--split {args.split}, {report['rows']} rows")
    return 0


def headline(report: dict[str, Any]) -> dict[str, float]:
    """Per guard, the right claims it alone rejects and the wrong ones it alone catches, all suites."""
    alone = {name: g["rejects_alone"] for name, g in report["guards"].items()}
    return {f"{name}.{label}_rejected_alone": sum(s.get(label, 0) for s in by_suite.values())
            for name, by_suite in alone.items() for label in ("right", "wrong")}


if __name__ == "__main__":
    sys.exit(main())
