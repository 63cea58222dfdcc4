"""Every result file the docs and the code point a reader to is in bench/results/: README.md's
benchmark table names one per row, model cards, docs, config comments and docstrings cite them
as evidence. bench/results/ keeps one result per benchmark (bench/README.md); a file that left
it is cited with the commit that holds it ("bench/results/X at 1650dc5"), which this allows.
Every run's figures are rows of bench/results/history.csv (bench/history.py), and the results,
bench/README.md and README's benchmark table stay small enough to read."""

from __future__ import annotations

import csv
import itertools
import re
from pathlib import Path

import pytest

from bench import history

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "bench" / "results"
CITED = re.compile(r"bench/results/([\w.*{},-]+?)(?=[`'\")\]\s;:]|,\s|\.\s|\.$|$)(`?\s+at\s+[0-9a-f]{7})?", re.M)


def sources() -> list[Path]:
    paths = [ROOT / "README.md", ROOT / "config.toml"] + sorted((ROOT / "docs").rglob("*.md"))
    paths += sorted((ROOT / "models").glob("*.md"))
    paths += sorted(p for d in ("core", "storage", "models", "bot", "adapters", "tests", "bench") for p in (ROOT / d).rglob("*.py"))
    return [p for p in paths if p.is_file() and p != Path(__file__).resolve()]


def expand(name: str) -> list[str]:
    """`a{,-2}.json` -> a.json, a-2.json (one brace group at a time)."""
    m = re.search(r"\{([^{}]*)\}", name)
    if m is None:
        return [name]
    return list(itertools.chain.from_iterable(expand(name[: m.start()] + alt + name[m.end():])
                                              for alt in m.group(1).split(",")))


def present(name: str) -> bool:
    return any(next(RESULTS.glob(n), None) is not None for n in expand(name.rstrip(".,")))


def cited_names(text: str) -> list[str]:
    return [m.group(1) for m in CITED.finditer(text) if not m.group(2) and "<" not in m.group(1)]


def test_every_result_file_the_docs_and_code_cite_is_there() -> None:
    missing = {f"{p.relative_to(ROOT)}: {n}" for p in sources() for n in cited_names(p.read_text(encoding="utf-8"))
               if not present(n)}
    assert missing == set()


def test_each_readme_benchmark_row_names_a_result_that_is_there() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    table = text[text.index("## Benchmarks"):].split("\n## ")[0]
    rows = [line for line in table.splitlines() if line.startswith("| ") and "---" not in line][1:]
    named = [tok for row in rows for tok in re.findall(r"`([^`]+)`", row.rstrip(" |").rsplit("|", 1)[1])
             if not tok.startswith("python ")]
    assert named, "the README's benchmark table names no result file"
    assert [n for n in named if not (present(n) or present(n + ".json") or present(n + ".md"))] == []


def test_the_reference_check_reads_what_it_should() -> None:
    assert cited_names("see bench/results/load.md and `bench/results/a{,-2}.json`.") == ["load.md", "a{,-2}.json"]
    assert cited_names("(`bench/results/grounding-squad-*` at 1650dc5)") == []
    assert cited_names("written to bench/results/load-<db>-<N>w.json") == []
    assert expand("a{,-2}.{json,md}") == ["a.json", "a.md", "a-2.json", "a-2.md"]
    assert present("latency.json") and not present("latency-10k-loaded.json")


def readme_table() -> list[list[str]]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    table = text[text.index("## Benchmarks"):].split("\n## ")[0]
    return [[c.strip() for c in line.strip().strip("|").split("|")] for line in table.splitlines()
            if line.startswith("|") and "---" not in line]


def test_the_readme_table_holds_figures_not_stories() -> None:
    rows = readme_table()
    assert len(rows) > 2
    assert max(len(cell) for row in rows for cell in row) <= 200, "a cell holds one figure, its target and a link"


def test_record_appends_a_row_per_figure_with_the_columns(tmp_path: Path) -> None:
    path = tmp_path / "history.csv"
    written = history.record("latency", {"turn_p50_ms": 50.37, "reader_turn_p50_ratio": 1.35, "embedder": "minilm",
                                         "prebuilt": True, "ingest_seconds": None}, "load 1.7\nat start",
                             path=path, commit_id="f0b89d8", date="2026-11-28T11:43:22Z")
    assert written == 2  # text, flags and missing values are not figures
    assert history.record("fuzz", {"off_topic_or_injected_answered": 0}, "--count 2000", path=path) == 1
    with path.open(encoding="utf-8", newline="") as fh:
        rows = list(csv.reader(fh))
    assert rows[0] == ["commit", "date", "benchmark", "metric", "value", "note"]
    assert rows[1:3] == [["f0b89d8", "2026-11-28T11:43:22Z", "latency", "turn_p50_ms", "50.37", "load 1.7 at start"],
                         ["f0b89d8", "2026-11-28T11:43:22Z", "latency", "reader_turn_p50_ratio", "1.35", "load 1.7 at start"]]
    commit, date, *rest = rows[3]
    assert re.fullmatch(r"[0-9a-f]{7,}(\+dirty)?|unknown", commit), commit
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", date), date
    assert rest == ["fuzz", "off_topic_or_injected_answered", "0", "--count 2000"] and len(rows) == 4


@pytest.fixture
def two_benchmarks(tmp_path: Path) -> Path:
    path = tmp_path / "history.csv"
    for commit, paraphrases, p50 in (("9f07a07", 0.8028, 50.37), ("1234abc", 0.8254, 48.1)):
        history.record("grounding-docs", {"docs.paraphrases_answered_from_section": paraphrases,
                                          "docs.off_docs_refused": 0.9}, "--suites docs", path=path, commit_id=commit)
        history.record("latency", {"turn_p50_ms": p50}, "200 questions", path=path, commit_id=commit)
    return path


def test_the_command_prints_a_benchmarks_rows_as_a_table(two_benchmarks: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    assert history.main(["--file", str(two_benchmarks), "--benchmark", "grounding-*"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["commit", "date", "benchmark", "metric", "value", "note"]
    assert len(lines) == 5 and all(line.split()[2] == "grounding-docs" for line in lines[1:])
    assert lines[1].split()[:5] == ["9f07a07", history.now()[:10], "grounding-docs",
                                    "docs.paraphrases_answered_from_section", "0.8028"]
    assert lines[1].endswith("--suites docs")
    assert history.main(["--file", str(two_benchmarks), "--metric", "turn_*"]) == 0
    assert [line.split()[4] for line in capsys.readouterr().out.splitlines()[1:]] == ["50.37", "48.1"]
    assert history.main(["--file", str(two_benchmarks), "--benchmark", "scale"]) == 1  # no rows: says so


def test_the_command_plots_the_figures_over_commits(two_benchmarks: Path, tmp_path: Path) -> None:
    png = tmp_path / "plots" / "docs.png"
    assert history.main(["--file", str(two_benchmarks), "--metric", "docs.*", "--plot", str(png)]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5000


def test_the_history_holds_every_kept_result() -> None:
    rows = history.read()
    assert rows, "bench/results/history.csv is empty"
    for r in rows:
        assert re.fullmatch(r"[0-9a-f]{7,}(\+dirty)?", r["commit"]) and r["date"].endswith("Z"), r
        float(r["value"])
    named = {r["benchmark"] for r in rows}
    assert {p.stem for p in RESULTS.glob("*.json")} - named == set()
