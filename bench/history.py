"""The figures of every benchmark run, one row each, in one machine-readable file.

Every benchmark that writes its result to bench/results/ also appends its headline figures to
bench/results/history.csv: one row per figure, with the commit measured ("+dirty" when the
working tree held uncommitted changes outside bench/results/), the date (UTC), the benchmark (the
name of its result file), the metric, the value and a short note. The result file holds the
latest run; this file holds every run before it.

    python -m bench.history                                          # every row, as a table
    python -m bench.history --benchmark grounding-docs               # one benchmark (shell patterns too)
    python -m bench.history --metric 'docs.paraphrases_answered*'    # one figure, whatever run held it
    python -m bench.history --benchmark latency --plot /tmp/latency.png   # the figures over commits
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import math
import subprocess
import sys
from collections.abc import Mapping, Sequence
from fnmatch import fnmatchcase
from pathlib import Path

from bench import RESULTS, ROOT

HISTORY = RESULTS / "history.csv"
COLUMNS = ("commit", "date", "benchmark", "metric", "value", "note")


def commit(root: Path = ROOT) -> str:
    """The short commit of HEAD, with "+dirty" when tracked files outside bench/results/ differ."""
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=30,
                              check=True).stdout.strip()

    try:
        head = git("rev-parse", "--short", "HEAD")
        dirty = git("status", "--porcelain", "--untracked-files=no", "--", ".", ":(exclude)bench/results")
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return head + ("+dirty" if dirty else "")


def now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _value(v: object) -> str | None:
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
        return None
    return format(v, "d") if isinstance(v, int) else format(v, ".6g")


def record(benchmark: str, metrics: Mapping[str, float], note: str = "", *, path: Path = HISTORY,
           commit_id: str | None = None, date: str | None = None) -> int:
    """Append one row per numeric metric (others are skipped) and return how many were written.
    The header is written when the file is new or empty."""
    rows = [(name, text) for name, value in metrics.items() if (text := _value(value)) is not None]
    if not rows:
        return 0
    commit_id = commit_id or commit()
    date = date or now()
    note = " ".join(note.split())
    path.parent.mkdir(parents=True, exist_ok=True)
    new = not path.exists() or path.stat().st_size == 0
    with path.open("a", encoding="utf-8", newline="") as fh:
        out = csv.writer(fh, lineterminator="\n")
        if new:
            out.writerow(COLUMNS)
        out.writerows((commit_id, date, benchmark, name, text, note) for name, text in rows)
    return len(rows)


def read(path: Path = HISTORY, benchmark: str = "", metric: str = "") -> list[dict[str, str]]:
    """The rows of the history file, in file order, filtered by shell patterns (fnmatch) on the
    benchmark and the metric; an empty pattern matches everything."""
    if not path.exists():
        return []
    with path.open(encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    return [r for r in rows if (not benchmark or fnmatchcase(r["benchmark"], benchmark))
            and (not metric or fnmatchcase(r["metric"], metric))]


def table(rows: Sequence[Mapping[str, str]]) -> str:
    """The rows as an aligned text table, the date shortened to the day."""
    cells = [list(COLUMNS)] + [[r["commit"], r["date"][:10], r["benchmark"], r["metric"], r["value"], r["note"]]
                               for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(COLUMNS) - 1)]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=False)) + "  " + row[-1]
                     for row in cells).rstrip() + "\n"


def plot(rows: Sequence[Mapping[str, str]], out: Path) -> Path:
    """One line per (benchmark, metric) over the runs (a commit can hold several, told apart by
    date and note), in the order the file names them; each run is labelled with its commit."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs: dict[tuple[str, str, str], int] = {}
    for r in rows:
        runs.setdefault((r["commit"], r["date"], r["note"]), len(runs))
    series: dict[str, dict[int, float]] = {}
    for r in rows:
        series.setdefault(f"{r['benchmark']}: {r['metric']}", {})[runs[(r["commit"], r["date"], r["note"])]] = \
            float(r["value"])
    fig, ax = plt.subplots(figsize=(max(6.0, 0.45 * len(runs) + 3), 4.5))
    for label, points in series.items():
        xs = sorted(points)
        ax.plot(xs, [points[x] for x in xs], marker="o", label=label)
    ax.set_xticks(range(len(runs)), [commit for commit, _, _ in runs], rotation=60, ha="right", fontsize=7)
    ax.set_xlabel("run (commit)")
    ax.set_ylabel("value")
    if len(series) <= 12:
        ax.legend(fontsize=7)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.history", description=__doc__.split("\n")[0])
    p.add_argument("--benchmark", default="", help="a benchmark's name or a shell pattern (grounding-*)")
    p.add_argument("--metric", default="", help="a metric's name or a shell pattern (docs.*)")
    p.add_argument("--plot", type=Path, default=None, help="draw the figures over commits into this PNG file")
    p.add_argument("--file", type=Path, default=HISTORY, help="the history file (default bench/results/history.csv)")
    args = p.parse_args(argv)
    rows = read(args.file, args.benchmark, args.metric)
    if not rows:
        print(f"no rows in {args.file} for benchmark {args.benchmark or '*'}, metric {args.metric or '*'}",
              file=sys.stderr)
        return 1
    if args.plot:
        print(f"wrote {plot(rows, args.plot)} ({len(rows)} rows)")
    else:
        sys.stdout.write(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
