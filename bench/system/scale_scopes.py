"""Knowledge scopes at scale: the scoped search of `bench.system.scale --scopes N`.

    nice -n 10 python -m bench.system.scale --sizes 100000 --scopes 10 --out scale_scopes

A chat served by a knowledge scope searches with a prefilter on the chunks' `scopes` column
(storage/scope_column.py). Here the synthetic table's documents are spread over N scopes (one
each, every tenth document in a second one too), and the same run measures:
  * recall@10 of the scoped vector leg (the configured ANN query with the scope's prefilter)
    against exact scoped search (the same prefilter, no vector index), one scope per question
    in turn;
  * the hybrid search's latency with and without a scope, alternating per question in the one
    serving process, so both see the same machine load.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np


def pct(values: list[float], q: float) -> float:
    return round(float(np.percentile(np.asarray(values), q)), 2) if values else 0.0


def scopes_of_documents(doc_numbers: np.ndarray, n: int) -> list[list[str]]:
    """Document d is in scope d mod n; every tenth document is in the next scope too (a shared one)."""
    if n <= 0:
        return [[] for _ in doc_numbers]
    return [[f"s{d % n}", *([f"s{(d + 1) % n}"] if d % 10 == 0 and n > 1 else [])] for d in doc_numbers.tolist()]


def scoped_recall(index: Any, qvecs: np.ndarray, n: int) -> dict[str, Any]:
    """recall@10 of the configured ANN query with a scope's prefilter against exact scoped search,
    with its latency and the exact search's; which of the two `LanceChunkIndex.search` takes for
    these scopes (a scope of at most `scope_exact_rows` rows is searched exactly)."""
    from storage.ann import ef_for, nprobes_for
    from storage.scope_column import scope_filter

    tbl = index.table()
    index.version()
    plan = index._search_plan(tbl)
    hits, times, exact_times = 0, [], []
    for i, q in enumerate(qvecs):
        where = scope_filter(f"s{i % n}")
        ef = ef_for(plan, index.settings, index._scope_share(tbl, f"s{i % n}")[1])
        t0 = time.perf_counter()
        exact = set(tbl.search(q, vector_column_name="vector").distance_type("cosine").where(where, prefilter=True)
                    .bypass_vector_index().limit(10).select(["chunk_id"]).to_arrow().column("chunk_id").to_pylist())
        exact_times.append((time.perf_counter() - t0) * 1000)
        query = tbl.search(q, vector_column_name="vector").distance_type("cosine").where(where, prefilter=True)
        query = query.limit(index.candidates)
        if plan is not None:
            query = query.nprobes(nprobes_for(plan, index.settings)).refine_factor(max(1, index.settings.refine_factor))
            if ef:
                query = query.ef(ef)
        t0 = time.perf_counter()
        got = query.select(["chunk_id", "_distance"]).to_arrow().column("chunk_id").to_pylist()[:10]
        times.append((time.perf_counter() - t0) * 1000)
        hits += len(exact & set(got))
    rows = [index._scope_share(tbl, f"s{i}")[0] for i in range(n)]
    small = max(rows) <= index.settings.scope_exact_rows
    return {"scopes": n, "exact_queries": len(qvecs), "rows_per_scope": {"min": min(rows), "max": max(rows)},
            "search_takes": "exact" if small else "ann_with_prefilter",
            "ann_with_prefilter": {"ef": ef_for(plan, index.settings, index._scope_share(tbl, "s0")[1]),"recall_at_10": round(hits / (10 * len(qvecs)), 4),
                                   "vector_leg_p50_ms": pct(times, 50), "vector_leg_p95_ms": pct(times, 95)},
            "exact": {"recall_at_10": 1.0, "vector_leg_p50_ms": pct(exact_times, 50),
                      "vector_leg_p95_ms": pct(exact_times, 95)}}


def scoped_probe(index: Any, qs: list[str], qv: np.ndarray, n: int) -> dict[str, Any]:
    """The hybrid search with and without a scope, alternating which goes first per question."""
    from core.normalize import normalize_text

    plain: list[float] = []
    scoped: list[float] = []
    legs: dict[str, list[float]] = {f"{kind}_{leg}": [] for kind in ("unscoped", "scoped") for leg in ("vector", "text")}
    for i, (q, v) in enumerate(zip(qs, qv, strict=True)):
        norm, scope = normalize_text(q), f"s{i % n}"
        for which in ((None, scope) if i % 2 else (scope, None)):
            t0 = time.perf_counter()
            index.search(norm, v, 5, scope=which)
            (plain if which is None else scoped).append((time.perf_counter() - t0) * 1000)
            kind = "unscoped" if which is None else "scoped"
            legs[f"{kind}_vector"].append(index.leg_times.vector_ms)  # each leg's wall time inside LanceDB's loop
            legs[f"{kind}_text"].append(index.leg_times.text_ms)
    p95_plain, p95_scoped = pct(plain, 95), pct(scoped, 95)
    return {"scopes": n, "queries": len(plain), "unscoped_p50_ms": pct(plain, 50), "unscoped_p95_ms": p95_plain,
            "scoped_p50_ms": pct(scoped, 50), "scoped_p95_ms": p95_scoped,
            "p95_ratio": round(p95_scoped / p95_plain, 3) if p95_plain else None,
            "legs_p50_p95_ms": {k: (pct(t, 50), pct(t, 95)) for k, t in legs.items()}}
