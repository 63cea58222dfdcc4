"""Which ANN index keeps recall@10 >= 0.95 at the least query cost: index variants compared on one table.

    nice -n 10 python -m bench.tuning.ann_variants [--rows 200000] [--variants IVF_PQ:48,IVF_PQ:96,IVF_HNSW_SQ]

Why: at 1M chunks the default IVF_PQ (48 sub-vectors) reached recall@10 0.93 against exact search
(bench/results/scale_ivfpq-1000000.json at 681ff38); a 1M build costs half an hour, so the candidates are compared
on a smaller table of the same data (bench.system.scale's real passages and perturbed copies) with the
same rows per partition, and probes given as a share of the partitions (20 of 244 at 1M is 8%).
Each variant is trained on the same table (`replace=True`), then every (probe share, refine
factor) setting is queried like `LanceChunkIndex.search` asks (20 candidates, the first 10
compared with exact search). Results are written after each variant; a variant already in the
output file is skipped (resumable). Each variant's training time and best recall@10 are appended
to bench/results/history.csv.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench.history import record
from bench.system.scale import RESULTS, base_set, pct, synthetic_batch

SHARES = (0.04, 0.08, 0.2)
REFINES = (10, 20, 40)
HNSW_SHARES = (0.08, 0.2, 0.4, 1.0)
HNSW_REFINES = (1, 10)  # SQ distances are close to exact already; ef is LanceDB's default (>= limit x refine)


def table_at(work: Path, base: dict[str, Any], rows: int) -> Any:
    """The synthetic chunk table of `rows` rows (written once, re-used by later runs)."""
    import lancedb

    from storage.index.chunk_table import TABLE

    db = lancedb.connect(str(work))
    try:
        tbl = db.open_table(TABLE)
        if tbl.count_rows() == rows:
            return tbl
        db.drop_table(TABLE)
    except (FileNotFoundError, ValueError):
        pass
    dim = base["vectors"].shape[1]
    tbl = db.create_table(TABLE, data=synthetic_batch(base, 0, min(rows, 50_000), dim))
    for start in range(50_000, rows, 50_000):
        tbl.add(synthetic_batch(base, start, min(rows, start + 50_000), dim))
    tbl.optimize()
    return tbl


def train(tbl: Any, variant: str, partitions: int) -> float:
    from lancedb.index import HnswSq, IvfPq

    kind, _, arg = variant.partition(":")
    if kind == "IVF_HNSW_SQ":
        config: Any = HnswSq(distance_type="cosine", num_partitions=partitions)
    else:
        config = IvfPq(distance_type="cosine", num_partitions=partitions, num_sub_vectors=int(arg or 48))
    t0 = time.perf_counter()
    tbl.create_index("vector", config=config, replace=True)
    return round(time.perf_counter() - t0, 1)


def query_grid(tbl: Any, variant: str, partitions: int, qvecs: np.ndarray, exact: list[set[str]]) -> list[dict[str, Any]]:
    """recall@10 and vector-leg latency per setting (20 candidates, columns as the search selects)."""
    from storage.index.chunk_card import CARD

    hnsw = variant.startswith("IVF_HNSW")
    out = []
    for share in (HNSW_SHARES if hnsw else SHARES):
        nprobes = max(1, math.ceil(share * partitions))
        for refine in (HNSW_REFINES if hnsw else REFINES):
            hits, times = 0, []
            for q, ex in zip(qvecs, exact, strict=True):
                query = (tbl.search(q, vector_column_name="vector").distance_type("cosine").limit(20)
                         .nprobes(nprobes).refine_factor(refine))
                t0 = time.perf_counter()
                got = query.select(["chunk_id", CARD, "_distance"]).to_arrow().column("chunk_id").to_pylist()[:10]
                times.append((time.perf_counter() - t0) * 1000)
                hits += len(ex & set(got))
            row = {"probe_share": share, "nprobes": nprobes, "refine_factor": refine,
                   "recall_at_10": round(hits / (10 * len(qvecs)), 4), "p50_ms": pct(times, 50),
                   "p95_ms": pct(times, 95), "load_avg": [round(x, 2) for x in os.getloadavg()]}
            print(f"  {variant} {row}", flush=True)
            out.append(row)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--variants", default="IVF_PQ:48,IVF_PQ:96,IVF_HNSW_SQ")
    ap.add_argument("--rows-per-partition", type=int, default=4096)
    ap.add_argument("--queries", type=int, default=50)
    ap.add_argument("--work", default="/tmp/groundbot-ann-variants")
    ap.add_argument("--out", default="", help="default: bench/results/ann-variants-<rows>[-rpp<rows per partition>].json")
    args = ap.parse_args(argv)
    rpp = "" if args.rows_per_partition == 4096 else f"-rpp{args.rows_per_partition}"
    out = Path(args.out or RESULTS / f"ann-variants-{args.rows}{rpp}.json")
    result: dict[str, Any] = json.loads(out.read_text()) if out.exists() else {}
    base = base_set(8000, args.queries + 51)
    work = Path(args.work) / str(args.rows)
    work.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    tbl = table_at(work, base, args.rows)
    partitions = max(1, args.rows // args.rows_per_partition)
    result.setdefault("rows", args.rows)
    result.setdefault("partitions", partitions)
    result.setdefault("data", "bench.system.scale's 3,621 real passages and MiniLM vectors, then perturbed copies")
    print(f"table of {args.rows} rows ready in {time.perf_counter() - t0:.0f}s; {partitions} partitions", flush=True)
    qvecs = base["qvectors"][: args.queries]
    exact = [set(tbl.search(q, vector_column_name="vector").distance_type("cosine").bypass_vector_index()
                 .limit(10).select(["chunk_id", "_distance"]).to_arrow().column("chunk_id").to_pylist()) for q in qvecs]
    variants = result.setdefault("variants", {})
    for variant in args.variants.split(","):
        if variant in variants:
            print(f"{variant}: measured already; skipped", flush=True)
            continue
        seconds = train(tbl, variant, partitions)
        print(f"{variant}: trained in {seconds}s", flush=True)
        variants[variant] = {"train_seconds": seconds, "load_avg": [round(x, 2) for x in os.getloadavg()],
                             "grid": query_grid(tbl, variant, partitions, qvecs, exact)}
        out.write_text(json.dumps(result, indent=2) + "\n")
        best = max(variants[variant]["grid"], key=lambda r: (r["recall_at_10"], -r["p50_ms"]))
        record(out.stem, {f"{variant}.train_seconds": seconds, f"{variant}.best_recall_at_10": best["recall_at_10"],
                          f"{variant}.best_p50_ms": best["p50_ms"]},
               f"--rows {args.rows} --rows-per-partition {args.rows_per_partition}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
