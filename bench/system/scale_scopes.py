"""Knowledge scopes at scale: the scoped search of `bench.system.scale --scopes N`.

    nice -n 10 python -m bench.system.scale --sizes 1000000 --scopes 10   # bench/results/scale_scope_tables-1000000.json

A chat served by a knowledge scope searches its scope's own table (storage/index/scope_tables.py), or,
without scope tables, the chunk table with a prefilter on its `scopes` column
(storage/index/scope_column.py). Here the synthetic table's documents are spread over N scopes (one
each, every tenth document in a second one too), and the same run measures:
  * recall@10 of the scoped vector leg against exact scoped search (no vector index), one
    scope per question in turn: through each scope's own table (storage/index/scope_tables.py) and
    through the chunk table with the scope's prefilter;
  * the hybrid search's latency with and without a scope, alternating per question in the one
    serving process, so both see the same machine load.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from bench.system.leg_times import LastLegs


def pct(values: list[float], q: float) -> float:
    return round(float(np.percentile(np.asarray(values), q)), 2) if values else 0.0


def scopes_of_documents(doc_numbers: np.ndarray, n: int) -> list[list[str]]:
    """Document d is in scope d mod n; every tenth document is in the next scope too (a shared one)."""
    if n <= 0:
        return [[] for _ in doc_numbers]
    return [[f"s{d % n}", *([f"s{(d + 1) % n}"] if d % 10 == 0 and n > 1 else [])] for d in doc_numbers.tolist()]


def _leg_recall(index: Any, qvecs: np.ndarray, n: int, table_of: Any, where_of: Any, ef_of: Any) -> dict[str, Any]:
    """recall@10 of the configured ANN query against exact search on the same rows, one scope
    per question in turn: `table_of(scope)` the table searched, `where_of(scope)` its prefilter
    ('' = none), `ef_of(scope)` the graph's candidate list."""
    from storage.index.ann import nprobes_for

    hits, times, exact_times = 0, [], []
    for i, q in enumerate(qvecs):
        scope = f"s{i % n}"
        tbl, where = table_of(scope), where_of(scope)
        plan = index.plans.plan(tbl)

        def query(tbl: Any = tbl, where: str = where, q: Any = q) -> Any:
            base = tbl.search(q, vector_column_name="vector").distance_type("cosine")
            return base.where(where, prefilter=True) if where else base

        t0 = time.perf_counter()
        exact = set(query().bypass_vector_index().limit(10).select(["chunk_id"]).to_arrow().column("chunk_id").to_pylist())
        exact_times.append((time.perf_counter() - t0) * 1000)
        ann = query().limit(index.searcher.candidates)
        if plan is not None:
            ann = ann.nprobes(nprobes_for(plan, index.settings)).refine_factor(max(1, index.settings.refine_factor))
            if ef := ef_of(scope, plan):
                ann = ann.ef(ef)
        t0 = time.perf_counter()
        got = ann.select(["chunk_id", "_distance"]).to_arrow().column("chunk_id").to_pylist()[:10]
        times.append((time.perf_counter() - t0) * 1000)
        hits += len(exact & set(got))
    return {"recall_at_10": round(hits / (10 * len(qvecs)), 4), "vector_leg_p50_ms": pct(times, 50),
            "vector_leg_p95_ms": pct(times, 95), "exact_vector_leg_p50_ms": pct(exact_times, 50),
            "exact_vector_leg_p95_ms": pct(exact_times, 95)}


def scoped_recall(index: Any, qvecs: np.ndarray, n: int) -> dict[str, Any]:
    """recall@10 of the scoped vector leg against exact scoped search, with its latency and the
    exact search's: through each scope's own table when the index has them (what
    `LanceChunkIndex.search` reads then, storage/index/scope_tables.py), and through the chunk table
    with the scope's prefilter (what it reads without them; a scope of at most
    `scope_exact_rows` rows is then searched exactly)."""
    from storage.index.ann import ef_for
    from storage.index.scope_column import scope_filter

    tbl = index.table()
    version = int(index.version())
    rows = [index.searcher.scope_share(tbl, f"s{i}")[0] for i in range(n)]
    out: dict[str, Any] = {"scopes": n, "exact_queries": len(qvecs), "rows_per_scope": {"min": min(rows), "max": max(rows)}}
    own = {f"s{i}": index.scope_tables.for_search(f"s{i}", version) for i in range(n)} if index.settings.scope_tables else {}
    if own and all(own.values()):
        out["search_takes"] = "scope_tables"
        out["scope_tables"] = _leg_recall(index, qvecs, n, lambda s: own[s][0], lambda s: "",
                                          lambda s, plan: ef_for(plan, index.settings))
    else:
        out["search_takes"] = "exact" if max(rows) <= index.settings.scope_exact_rows else "ann_with_prefilter"
    out["ann_with_prefilter"] = _leg_recall(index, qvecs, n, lambda s: tbl, scope_filter,
                                            lambda s, plan: ef_for(plan, index.settings, index.searcher.scope_share(tbl, s)[1]))
    return out


def scoped_probe(index: Any, qs: list[str], qv: np.ndarray, n: int) -> dict[str, Any]:
    """The hybrid search with and without a scope, alternating which goes first per question,
    after two warm-up searches in each scope (the unscoped search is warm by then: the serving
    probe ran its own warm-up and 200 questions before)."""
    from core.text.normalize import normalize_text

    plain: list[float] = []
    scoped: list[float] = []
    legs: dict[str, list[float]] = {f"{kind}_{leg}": [] for kind in ("unscoped", "scoped") for leg in ("vector", "text")}
    legs_seen = LastLegs()
    index.observe_legs(legs_seen)
    for i in range(n):  # warm-up, as the unscoped search had: each scope's first search opens its table's index files
        for q, v in zip(qs[:2], qv[:2], strict=True):
            index.search(normalize_text(q), v, 5, scope=f"s{i}")
    for i, (q, v) in enumerate(zip(qs, qv, strict=True)):
        norm, scope = normalize_text(q), f"s{i % n}"
        for which in ((None, scope) if i % 2 else (scope, None)):
            t0 = time.perf_counter()
            index.search(norm, v, 5, scope=which)
            (plain if which is None else scoped).append((time.perf_counter() - t0) * 1000)
            kind = "unscoped" if which is None else "scoped"
            legs[f"{kind}_vector"].append(legs_seen.vector_ms)  # each leg's wall time inside LanceDB's loop
            legs[f"{kind}_text"].append(legs_seen.text_ms)
    p95_plain, p95_scoped = pct(plain, 95), pct(scoped, 95)
    return {"scopes": n, "queries": len(plain), "unscoped_p50_ms": pct(plain, 50), "unscoped_p95_ms": p95_plain,
            "scoped_p50_ms": pct(scoped, 50), "scoped_p95_ms": p95_scoped,
            "p95_ratio": round(p95_scoped / p95_plain, 3) if p95_plain else None,
            "legs_p50_p95_ms": {k: (pct(t, 50), pct(t, 95)) for k, t in legs.items()}}
