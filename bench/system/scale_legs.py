"""Where a big index's search time goes: each search leg timed with and without the card a hit
is read from, the full-text leg with and without stop words, and fetches of rows by row id.

    python -m bench.system.scale_legs --index DIR [--queries 100]

DIR is an index kept by `bench.system.scale --work` (e.g. the 1M one); the questions and their vectors
come from bench.system.scale's cache. Every variant runs the same questions after 10 warm-up ones,
one query at a time on LanceDB's event loop. Results: bench/results/scale_legs-<rows>.json, and
each variant's p50 / p95 appended to bench/results/history.csv.
The last variants fetch a question's 20 vector-leg rows by row id with different columns: the
cost of reading rows at random goes with the number of columns read, not with the rows (why a
hit's shown fields are one card column, storage/index/chunk_card.py).
Nothing here changes how groundbot searches: it says where the time goes.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from bench import ROOT
from bench.history import record
from bench.system.scale import CACHE, RESULTS, pct
from storage.index.ann import ef_for, nprobes_for
from storage.index.async_loop import LANCE_LOOP
from storage.index.chunk_card import CARD
from storage.index.chunk_index import LanceChunkIndex
from storage.index.chunk_search import fts_terms
from storage.index.search_legs import AsyncTableAt, LegQuery, rows, text_query, vector_query


def _terms(question: str, drop_stop: bool) -> str:
    return " ".join(fts_terms(question) if drop_stop else fts_terms(question, frozenset()))


class Legs:
    """The queries of one index, built by storage/index/search_legs.py as LanceChunkIndex.search asks them."""

    def __init__(self, index: LanceChunkIndex) -> None:
        tbl = index.table()
        assert tbl is not None, "no chunk table in the index"
        self.atbl = LANCE_LOOP.run(AsyncTableAt(index.uri, "chunks").at(int(tbl.version)))
        self.settings = index.settings
        self.plan = index.plans.plan(tbl)
        self.nprobes = nprobes_for(self.plan, index.settings) if self.plan else 0
        self.ef = ef_for(self.plan, index.settings)
        self.rows = tbl.count_rows()

    def _leg(self, v: np.ndarray, text: str, cols: list[str]) -> LegQuery:
        return LegQuery(v, text, 20, cols, self.nprobes, self.settings.refine_factor, self.ef)

    def vector(self, v: np.ndarray, cols: list[str]) -> Any:
        return vector_query(self.atbl, self._leg(v, "", cols))

    def text(self, question: str, cols: list[str], drop_stop: bool) -> Any:
        return text_query(self.atbl, self._leg(np.zeros(0, np.float32), _terms(question, drop_stop), cols), ())


def _pos(vectors: np.ndarray, v: np.ndarray) -> int:
    """Which question `v` is (the variants get the vector, the row ids are kept per question)."""
    return int(np.flatnonzero((vectors == v).all(axis=1))[0])


def _time(run: Callable[[], Any]) -> float:
    t0 = time.perf_counter()
    LANCE_LOOP.run(run())
    return (time.perf_counter() - t0) * 1000


def measure(index_dir: Path, n: int) -> dict[str, Any]:
    from bot.config import load_config

    cfg = load_config(ROOT / "config.toml")
    base = dict(np.load(CACHE, allow_pickle=False))
    legs = Legs(LanceChunkIndex(index_dir, base["vectors"].shape[1], "minilm", search=cfg.search_index))
    qs, qv = [str(q) for q in base["questions"][:n]], base["qvectors"][:n].astype(np.float32)
    variants: dict[str, Callable[[str, np.ndarray], Callable[[], Any]]] = {
        "vector leg, card (as searched)": lambda q, v: lambda: rows(legs.vector(v, [CARD])),
        "vector leg, chunk ids only": lambda q, v: lambda: rows(legs.vector(v, ["chunk_id"])),
        "full-text leg without stop words, card + vector (as searched)":
            lambda q, v: lambda: rows(legs.text(q, [CARD, "vector"], True)),
        "full-text leg without stop words, card only": lambda q, v: lambda: rows(legs.text(q, [CARD], True)),
        "full-text leg without stop words, chunk ids only": lambda q, v: lambda: rows(legs.text(q, ["chunk_id"], True)),
        "full-text leg with stop words, card + vector": lambda q, v: lambda: rows(legs.text(q, [CARD, "vector"], False)),
    }
    ids = [LANCE_LOOP.run(rows(legs.vector(v, ["chunk_id"]).with_row_id())).column("_rowid").to_pylist() for v in qv]
    for cols, label in (([CARD], "the card"), (["vector"], "the vector"), (["doc_id", "position", "kind"], "3 small columns")):
        variants[f"20 vector-leg rows by row id, {label}"] = (
            lambda q, v, cols=cols: lambda: legs.atbl.take_row_ids(ids[_pos(qv, v)]).select(cols).to_arrow())
    out: dict[str, Any] = {"rows": legs.rows, "queries": n, "nprobes": legs.nprobes, "ef": legs.ef,
                           "load_avg_before": os.getloadavg(), "variants": {}}
    for name, make in variants.items():
        for q, v in zip(qs[:10], qv[:10], strict=True):
            _time(make(q, v))
        ms = [_time(make(q, v)) for q, v in zip(qs, qv, strict=True)]
        out["variants"][name] = {"p50_ms": pct(ms, 50), "p95_ms": pct(ms, 95)}
        print(f"{name}: p50 {pct(ms, 50)} ms, p95 {pct(ms, 95)} ms", flush=True)
    out["load_avg_after"] = os.getloadavg()
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--index", type=Path, required=True, help="an index directory kept by bench.system.scale --work")
    ap.add_argument("--queries", type=int, default=100)
    args = ap.parse_args(argv)
    result = measure(args.index, args.queries)
    out = RESULTS / f"scale_legs-{result['rows']}.json"
    out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    figures = {f"{name}.{k}": v[k] for name, v in result["variants"].items() for k in ("p50_ms", "p95_ms")}
    record(out.stem, figures, f"--queries {args.queries}")
    print("wrote", out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
