"""The passage reader's refusal threshold, chosen on dev records: replays the dump of a grounding
run made with `[reader] min_answer_probability = 0` (every question read, none refused by the
reader) at each threshold, per suite, pass and split. A question is refused at threshold t when it
was refused anyway or its best chunk's probability (`reader_best`) is below t; the quotes of a
question still answered are taken as they were (at t > 0 the generator quotes only from chunks
reaching t, so the figures are a close estimate, checked by a real run at the chosen threshold).

    sed 's/^min_answer_probability = 0.4 .*/min_answer_probability = 0.0/' config.toml > /tmp/reader0.toml
    python -m bench.grounding --suites docs,clapnq_extractive --config /tmp/reader0.toml --dump /tmp/reader0.jsonl
    python -m bench.tuning.reader_threshold /tmp/reader0.jsonl

CLAPNQ rows are split as the reader's training splits them: index % 4 == 1 dev (never trained
on), == 3 trained on, even = test; the docs suite by its own dev / test split. The table goes to
bench/results/reader-threshold.md (--out), and the share right of every group at the shipped
threshold to bench/results/history.csv.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

from bench import RESULTS
from bench.history import commit, now, record
from core.settings import ReaderSettings

THRESHOLDS = (0.0, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8)


def split_of(row: dict[str, Any]) -> str:
    if str(row["suite"]).startswith("clapnq"):
        index = int(row["index"])
        return "test" if index % 2 == 0 else ("dev" if index % 4 == 1 else "trained")
    return str(row.get("split", ""))


def right_at(row: dict[str, Any], threshold: float) -> bool:
    best = row["scores"].get("reader_best")
    refused = bool(row["refused"]) or (best is not None and best < threshold)
    if row["expected"] == "refuse":
        return refused
    if "right" in row:  # the docs suite: answered from the section asked about
        return not refused and bool(row["right"])
    if row.get("with_gold") is not None:
        return not refused and bool(row["with_gold"])
    return not refused


def grouped(rows: list[dict[str, Any]]) -> dict[tuple[str, str, str], list[dict[str, Any]]]:
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        groups[(str(r["suite"]), str(r["pass"]), split_of(r))].append(r)
    return groups


def table(rows: list[dict[str, Any]], thresholds: tuple[float, ...] = THRESHOLDS) -> str:
    groups = grouped(rows)
    lines = ["| suite | pass | split | n | " + " | ".join(f"{t:g}" for t in thresholds) + " |",
             "|---|---|---|---:|" + "---:|" * len(thresholds)]
    for (suite, name, split), rs in sorted(groups.items()):
        shares = [sum(right_at(r, t) for r in rs) / len(rs) for t in thresholds]
        lines.append(f"| {suite} | {name} | {split} | {len(rs)} | " + " | ".join(f"{s:.2f}" for s in shares) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.tuning.reader_threshold", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dumps", nargs="+", type=Path, help="--dump files of a grounding run with the reader's threshold at 0")
    ap.add_argument("--out", type=Path, default=RESULTS / "reader-threshold.md",
                    help="also write the table (Markdown) here (default %(default)s)")
    ap.add_argument("--thresholds", default=",".join(map(str, THRESHOLDS)), help="comma-separated (default %(default)s)")
    args = ap.parse_args(argv)
    thresholds = tuple(float(t) for t in args.thresholds.split(","))
    rows = [json.loads(line) for path in args.dumps for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip()]
    text = "Share right (answered from gold / the right section, or refused when expected) per threshold:\n\n" + table(rows, thresholds)
    print(text)
    command = " ".join(["python -m bench.tuning.reader_threshold", *(sys.argv[1:] if argv is None else argv)])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(f"# The passage reader's refusal threshold\n\n`{command}` at {commit()}, {now()[:10]}\n\n"
                        + text, encoding="utf-8")
    shipped = ReaderSettings().min_answer_probability
    at = {f"{suite}.{name}.{split or 'all'}@{shipped:g}": round(sum(right_at(r, shipped) for r in rs) / len(rs), 4)
          for (suite, name, split), rs in sorted(grouped(rows).items())}
    record(args.out.stem, at, f"{len(rows)} rows, share right at the shipped threshold {shipped:g}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
