"""Every result file the docs and the code point a reader to is in bench/results/: README.md's
benchmark table names one per row, model cards, docs, config comments and docstrings cite them
as evidence. bench/results/ keeps one result per benchmark (bench/README.md); a file that left
it is cited with the commit that holds it ("bench/results/X at 1650dc5"), which this allows."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "bench" / "results"
CITED = re.compile(r"bench/results/([\w.*{},-]+?)(?=[`'\")\]\s;:]|,\s|\.\s|\.$|$)(`?\s+at\s+[0-9a-f]{7})?", re.M)


def sources() -> list[Path]:
    paths = [ROOT / "README.md", ROOT / "config.toml"] + sorted((ROOT / "docs").rglob("*.md"))
    paths += sorted((ROOT / "storage" / "models").glob("*.md"))
    paths += sorted(p for d in ("core", "storage", "bot", "adapters", "tests", "bench") for p in (ROOT / d).rglob("*.py"))
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
    assert [n for n in named if not (present(n + ".json") or present(n + ".md"))] == []


def test_the_reference_check_reads_what_it_should() -> None:
    assert cited_names("see bench/results/load.md and `bench/results/a{,-2}.json`.") == ["load.md", "a{,-2}.json"]
    assert cited_names("(`bench/results/grounding-squad-*` at 1650dc5)") == []
    assert cited_names("written to bench/results/load-<db>-<N>w.json") == []
    assert expand("a{,-2}.{json,md}") == ["a.json", "a.md", "a-2.json", "a-2.md"]
    assert present("latency.json") and not present("latency-10k-loaded.json")
