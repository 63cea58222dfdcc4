"""Scale benchmark: the chunk index at 10k, 100k and 1M chunks.

    nice -n 10 python -m bench.system.scale [--sizes 10000,100000,1000000] [--base 8000] [--queries 200]

Real text and real embeddings: SQuAD 2.0 and HaluEval passages embedded with the configured
embedder (MiniLM), questions from the same sets. Past the base set the table is the base
re-used with perturbations: every copy's text is prefixed "(copy N)" and its vector is the
base vector plus Gaussian noise (cosine ~0.9 to its original), re-normalised; the output says
so. Each size is written straight into the project's table schema, then indexed by the
project's own maintenance (`IndexUpkeep.maintain`, storage/index/upkeep.py), and measured:
  * search latency p50/p95 of `LanceChunkIndex.search` (hybrid: ANN + full text, fused),
    in a separate process that only opens the index and answers (its peak RSS is reported);
  * recall@10 of the vector leg against exact search (`bypass_vector_index`), for a small
    grid of nprobes/refine_factor settings and for the configured one;
  * the first suggestion lookup (what a refusal does) after an ingest vs. the steady state;
  * an ingest of 100 changed documents into the big index (total, embedding, maintenance);
  * with --scopes N, knowledge scopes (bench/system/scale_scopes.py): the documents spread over
    N scopes, the scoped vector leg's recall@10 against exact scoped search, and the hybrid
    search's p50/p95 with and without a scope in the same serving process.
Each size's results go to bench/results/scale-<size>.json as soon as it finishes (with --scopes,
scale_scope_tables-<size>.json, or scale_scopes-<size>.json when `scope_tables = false`); a size
whose file exists is skipped (delete it, or pass --force, to measure again). --probe,
--recall-only and --ingest-only on a kept index write scale_probe-<rows>.json,
scale_recall-<rows>.json and scale_ingest-<rows>.json. Every run's headline figures are appended
to bench/results/history.csv.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from bench import RESULTS, ROOT
from bench.datasets import HALUEVAL_FILE, SQUAD_FILE
from bench.history import record
from bench.system.leg_times import LastLegs
from core.text.normalize import normalize_text

CACHE = Path(tempfile.gettempdir()) / "groundbot-scale-base.npz"
NOISE = 0.025  # per-dimension noise of a copy's vector: cosine to its original ~0.9 for 384-d
GRID = ((10, 10), (20, 10), (20, 20), (20, 40), (50, 20))  # (nprobes, refine_factor) tried besides the configured
INSIDE = "GROUNDBOT_SCALE_INSIDE"  # set for the probe a full run starts: its figures are the full run's


def pct(values: list[float], q: float) -> float:
    return round(float(np.percentile(np.asarray(values), q)), 2) if values else 0.0


def base_set(n: int, n_questions: int) -> dict[str, Any]:
    """Real passages (title, text) and questions, with their embeddings (cached across runs)."""
    if CACHE.exists():
        data = dict(np.load(CACHE, allow_pickle=False))
        if (len(data["texts"]) >= n or bool(data.get("complete", False))) and len(data["questions"]) >= n_questions:
            return data  # a cache holding every passage there is serves any larger --base too
    titles: list[str] = []
    texts: list[str] = []
    questions: list[str] = []
    for art in json.loads(SQUAD_FILE.read_text(encoding="utf-8"))["data"]:
        for para in art["paragraphs"]:
            titles.append(art["title"].replace("_", " "))
            texts.append(para["context"][:900])
            questions.extend(q["question"] for q in para["qas"] if not q.get("is_impossible"))
    for line in HALUEVAL_FILE.read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        titles.append("")
        texts.append(rec["knowledge"][:900])
        questions.append(rec["question"])
    rng = np.random.default_rng(5)
    pick = rng.permutation(len(texts))[:n]
    qpick = rng.permutation(len(questions))[:n_questions]
    from models.embedders import make_embedder

    emb = make_embedder("minilm")
    t0 = time.perf_counter()
    vectors = emb.embed_passages([normalize_text(f"{titles[i]}\n{texts[i]}" if titles[i] else texts[i]) for i in pick])
    print(f"embedded {len(pick)} base passages in {time.perf_counter() - t0:.0f}s", flush=True)
    qs = [questions[i] for i in qpick]
    data = {"titles": np.array([titles[i] for i in pick]), "texts": np.array([texts[i] for i in pick]),
            "vectors": vectors.astype(np.float32), "questions": np.array(qs),
            "qvectors": emb.embed_queries([normalize_text(q) for q in qs]).astype(np.float32),
            "complete": np.array(len(pick) < n)}
    np.savez(CACHE, **data)
    return data


def synthetic_batch(base: dict[str, Any], start: int, stop: int, dim: int, scopes: int = 0) -> pa.Table:
    """Rows start..stop of the grown table: row i is base row i % B, copy i // B (perturbed);
    with `scopes`, each document's knowledge scopes (bench/system/scale_scopes.py)."""
    from bench.system.scale_scopes import scopes_of_documents
    from storage.index.chunk_card import CARD, pack
    from storage.index.chunk_table import schema

    b = len(base["texts"])
    idx = np.arange(start, stop)
    src, copy = idx % b, idx // b
    rng = np.random.default_rng(start)
    vecs = base["vectors"][src] + (copy[:, None] > 0) * rng.normal(0, NOISE, (len(idx), dim)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    texts = [f"(copy {c}) {base['texts'][s]}" if c else str(base["texts"][s]) for s, c in zip(src, copy, strict=True)]
    titles = [str(base["titles"][s]) for s in src]
    doc_ids = [f"synthetic/d{i // 4:07d}" for i in idx]  # four chunks per document
    chunk_ids, sources, positions = [f"c{i:08d}" for i in idx], [f"/synthetic/{d}" for d in doc_ids], idx % 4
    cols: dict[str, Any] = {
        "chunk_id": chunk_ids, "doc_id": doc_ids, "source": sources, "kind": ["doc"] * len(idx),
        "position": positions.astype(np.int32),
        "text_norm": [normalize_text(f"{t} {x}") for t, x in zip(titles, texts, strict=True)],
        "doc_hash": ["h"] * len(idx), "ingested_at": ["2026-01-01T00:00:00+00:00"] * len(idx),
        "vector": pa.FixedSizeListArray.from_arrays(pa.array(vecs.ravel(), pa.float32()), dim),
        CARD: [pack({"chunk_id": c, "doc_id": d, "source": s, "title": t, "heading": t, "kind": "doc", "position": p,
                     "text": x}) for c, d, s, t, p, x in zip(chunk_ids, doc_ids, sources, titles, positions, texts,
                                                             strict=True)],
        "scopes": scopes_of_documents(idx // 4, scopes),
    }
    return pa.table(cols, schema=schema(dim))


def build(index_dir: Path, base: dict[str, Any], size: int, settings: Any, scopes: int = 0) -> dict[str, Any]:
    """Write `size` rows (and one suggestion row per 20 chunks), then index them the project's way."""
    from storage.index.chunk_card import CARD, unpack
    from storage.index.chunk_index import LanceChunkIndex
    from storage.index.chunk_table import TABLE
    from storage.index.suggestion_index import SuggestionRow

    dim = base["vectors"].shape[1]
    index = LanceChunkIndex(index_dir, dim, "minilm", search=settings)
    t0 = time.perf_counter()
    step = 50_000
    for start in range(0, size, step):
        batch = synthetic_batch(base, start, min(size, start + step), dim, scopes)
        if start == 0:
            index.chunks._chunks = index.db.create_table(TABLE, data=batch)
        else:
            index.table().add(batch)
    index.writer.write_meta()
    headings = synthetic_batch(base, 0, max(1, size // 20), dim, scopes)
    rows = [SuggestionRow(d, "heading", f"{t} ({i})", v) for i, (d, t, v) in enumerate(zip(
        headings.column("doc_id").to_pylist(), [unpack(c)["title"] for c in headings.column(CARD).to_pylist()],
        headings.column("vector").to_numpy(zero_copy_only=False), strict=True))]
    index.suggestions.write(rows, [], dict(zip(headings.column("doc_id").to_pylist(),
                                               headings.column("scopes").to_pylist(), strict=True)))
    write_s = time.perf_counter() - t0
    index.chunks.written = size
    t0 = time.perf_counter()
    done = index.upkeep.maintain()
    return {"write_seconds": round(write_s, 1), "index_seconds": round(time.perf_counter() - t0, 1),
            "maintenance": done, "suggestion_rows": len(rows)}


def recall(index: Any, qvecs: np.ndarray, grid: tuple[tuple[int, ...], ...]) -> dict[str, Any]:
    """recall@10 of the vector leg against exact search, per (nprobes, refine_factor[, ef]), with
    latency. Like `LanceChunkIndex.search`, the ANN query asks for `candidates` rows (refine_factor
    x that many are re-ranked; ef, when given, is the graph search's candidate list) and its first
    10 are compared with the exact first 10."""
    tbl = index.table()
    exact = [set(tbl.search(q, vector_column_name="vector").distance_type("cosine").bypass_vector_index()
                 .limit(10).select(["chunk_id", "_distance"]).to_arrow().column("chunk_id").to_pylist()) for q in qvecs]
    plan = index.plans.plan(tbl)
    out: dict[str, Any] = {"exact_queries": len(qvecs)}
    from storage.index.ann import ef_for, nprobes_for

    configured = (nprobes_for(plan, index.settings), index.settings.refine_factor, ef_for(plan, index.settings)) \
        if plan else (0, 0, 0)
    for nprobes, refine, ef in ((*g, 0)[:3] for g in (*grid, configured)):
        if plan is None and (nprobes, refine) != (0, 0):
            continue
        hits, times, cpu = 0, [], []
        for q, ex in zip(qvecs, exact, strict=True):
            query = tbl.search(q, vector_column_name="vector").distance_type("cosine").limit(index.searcher.candidates)
            if nprobes:
                query = query.nprobes(nprobes).refine_factor(refine)
            if ef:
                query = query.ef(ef)
            t0, c0 = time.perf_counter(), time.process_time()
            got = query.select(["chunk_id", "_distance"]).to_arrow().column("chunk_id").to_pylist()[:10]
            times.append((time.perf_counter() - t0) * 1000)
            cpu.append((time.process_time() - c0) * 1000)
            hits += len(ex & set(got))
        key = "configured" if (nprobes, refine, ef) == configured else \
            f"nprobes={nprobes},refine={refine}" + (f",ef={ef}" if ef else "")
        out[key] = {"nprobes": nprobes, "refine_factor": refine, "ef": ef,
                    "recall_at_10": round(hits / (10 * len(qvecs)), 4),
                    "vector_leg_p50_ms": pct(times, 50), "vector_leg_p95_ms": pct(times, 95),
                    "vector_leg_cpu_p50_ms": pct(cpu, 50), "vector_leg_cpu_p95_ms": pct(cpu, 95)}
    return out


def serve_probe(index_dir: str, n: int) -> dict[str, Any]:
    """In a fresh process: open the index and answer questions; latency and peak RSS."""
    from storage.index.chunk_index import LanceChunkIndex

    base = dict(np.load(CACHE, allow_pickle=False))
    load0 = os.getloadavg()
    rss0 = peak_rss_mb()
    index = LanceChunkIndex(Path(index_dir), base["vectors"].shape[1], "minilm",
                            search=_settings(json.loads(os.environ["GROUNDBOT_SCALE_SETTINGS"])))
    legs_seen = LastLegs()
    index.observe_legs(legs_seen)
    qs, qv = [str(q) for q in base["questions"][:n]], base["qvectors"][:n]
    t0 = time.perf_counter()
    index.suggestion_candidates(qv[0], 30)
    first_suggest = (time.perf_counter() - t0) * 1000
    for q, v in zip(qs[:10], qv[:10], strict=True):  # warm-up
        index.search(normalize_text(q), v, 5)
    search_ms, search_cpu_ms, suggest_ms, version_ms, vec_ms, text_ms = [], [], [], [], [], []
    for q, v in zip(qs, qv, strict=True):
        t0 = time.perf_counter()
        index.version()
        version_ms.append((time.perf_counter() - t0) * 1000)
        t0, c0 = time.perf_counter(), time.process_time()
        index.search(normalize_text(q), v, 5)
        search_ms.append((time.perf_counter() - t0) * 1000)
        search_cpu_ms.append((time.process_time() - c0) * 1000)  # all threads: what the search costs
        vec_ms.append(legs_seen.vector_ms)  # each leg's wall time, measured inside LanceDB's event loop
        text_ms.append(legs_seen.text_ms)
        t0 = time.perf_counter()
        index.suggestion_candidates(v, 30)
        suggest_ms.append((time.perf_counter() - t0) * 1000)
    scoped: dict[str, Any] = {}
    n_scopes = int(os.environ.get("GROUNDBOT_SCALE_SCOPES", "0"))
    if n_scopes:
        from bench.system.scale_scopes import scoped_probe

        scoped = {"scoped": scoped_probe(index, qs, qv, n_scopes)}
    return {**scoped, "search_p50_ms": pct(search_ms, 50), "search_p95_ms": pct(search_ms, 95), "queries": len(search_ms),
            "search_cpu_p50_ms": pct(search_cpu_ms, 50), "search_cpu_p95_ms": pct(search_cpu_ms, 95),
            "vector_leg_p50_ms": pct(vec_ms, 50), "vector_leg_p95_ms": pct(vec_ms, 95),
            "text_leg_p50_ms": pct(text_ms, 50), "text_leg_p95_ms": pct(text_ms, 95),
            "load_avg_before": load0, "load_avg_after": os.getloadavg(),
            "suggestions_first_ms": round(first_suggest, 2), "suggestions_p50_ms": pct(suggest_ms, 50),
            "suggestions_p95_ms": pct(suggest_ms, 95), "version_check_p50_ms": pct(version_ms, 50),
            "peak_rss_mb": peak_rss_mb(), "peak_rss_before_open_mb": rss0}


def peak_rss_mb() -> float:
    """This process's peak resident set (VmHWM; unlike ru_maxrss it is not carried over exec)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return round(int(line.split()[1]) / 1024, 1)
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def _settings(raw: dict[str, Any]) -> Any:
    from storage.index.ann import SearchIndexSettings

    return SearchIndexSettings(**raw)


def changed_documents(index: Any, base: dict[str, Any], work: Path) -> dict[str, Any]:
    """Ingest 100 new documents into the big index, then change all 100 and ingest again."""
    from models.embedders import make_embedder
    from storage.ingestion.ingest import ingest
    from storage.settings import ChunkSettings

    emb = make_embedder("minilm")
    kb = work / "kb100"
    kb.mkdir(parents=True, exist_ok=True)
    texts = [str(t) for t in base["texts"]]
    for d in range(100):
        paras = [texts[(d * 4 + p) % len(texts)] for p in range(4)]
        (kb / f"doc{d:03d}.md").write_text(f"# Document {d}\n\n" + "\n\n".join(paras) + "\n", encoding="utf-8")
    settings = ChunkSettings()
    added = ingest([kb], index, emb, settings)
    for d in range(100):
        path = kb / f"doc{d:03d}.md"
        path.write_text(path.read_text(encoding="utf-8") + "\nThis paragraph was added in the second edition.\n",
                        encoding="utf-8")
    changed = ingest([kb], index, emb, settings)
    qv = base["qvectors"]
    t0 = time.perf_counter()
    index.suggestion_candidates(qv[0], 30)
    first = (time.perf_counter() - t0) * 1000
    steady = []
    for v in qv[1:51]:
        t0 = time.perf_counter()
        index.suggestion_candidates(v, 30)
        steady.append((time.perf_counter() - t0) * 1000)

    def one(s: Any) -> dict[str, Any]:
        return {"documents": len(s.added) + len(s.updated), "chunks_written": s.chunks_written,
                "vectors_reused": s.vectors_reused, "seconds": round(s.seconds, 1),
                "embed_seconds": round(s.embed_seconds, 1), "without_embedding_seconds": round(s.seconds - s.embed_seconds, 1),
                "maintenance": s.index_maintenance}

    return {"add_100_documents": one(added), "change_100_documents": one(changed),
            "first_suggestions_after_ingest_ms": round(first, 2), "suggestions_steady_p50_ms": pct(steady, 50)}


def measure(size: int, base: dict[str, Any], settings: Any, n_queries: int, n_exact: int,
            grid: tuple[tuple[int, ...], ...] = GRID, keep: Path | None = None, scopes: int = 0) -> dict[str, Any]:
    """Build, probe, check recall and ingest at one size; with `keep` the work directory (the
    index in keep/index) is that one and is left in place, so serving can be probed again later
    (python -m bench.system.scale --probe keep/index)."""
    from storage.index.chunk_index import LanceChunkIndex

    if keep is not None:
        if (keep / "index").exists():
            raise SystemExit(f"{keep / 'index'} exists: remove it or choose another --work directory")
        keep.mkdir(parents=True, exist_ok=True)
    work = keep if keep is not None else Path(tempfile.mkdtemp(prefix=f"groundbot-scale-{size}-"))
    try:
        built = build(work / "index", base, size, settings, scopes)
        print(f"[{size}] built: {built}", flush=True)
        env = {**os.environ, "GROUNDBOT_SCALE_SETTINGS": json.dumps(asdict(settings)),
               "GROUNDBOT_SCALE_SCOPES": str(scopes), INSIDE: "1"}
        probe = subprocess.run([sys.executable, "-m", "bench.system.scale", "--probe", str(work / "index"),
                                "--queries", str(n_queries)], capture_output=True, text=True, env=env, cwd=ROOT, check=True)
        served = json.loads(probe.stdout.strip().splitlines()[-1])
        print(f"[{size}] served: {served}", flush=True)
        index = LanceChunkIndex(work / "index", base["vectors"].shape[1], "minilm", search=settings)
        rec = recall(index, base["qvectors"][:n_exact], grid)
        if scopes:
            from bench.system.scale_scopes import scoped_recall

            rec["scoped"] = scoped_recall(index, base["qvectors"][:n_exact], scopes)
        print(f"[{size}] recall: {rec}", flush=True)
        ingest = changed_documents(index, base, work)
        print(f"[{size}] ingest: {ingest}", flush=True)
    finally:
        if keep is None:
            shutil.rmtree(work, ignore_errors=True)
    b = len(base["texts"])
    return {
        "chunks": size, "base_real_chunks": b, "embedder": "minilm",
        "data": ("real SQuAD/HaluEval passages and MiniLM embeddings" if size <= b else
                 f"{b} real passages with MiniLM embeddings, re-used {-(-size // b)} times: copies are prefixed "
                 f"'(copy N)' and their vectors perturbed (Gaussian noise {NOISE}/dimension, cosine ~0.9 to the original)"),
        "settings": asdict(settings), "build": built, "serving": served, "recall_vs_exact": rec, "ingest": ingest,
        "machine": {"cpus": os.cpu_count(), "python": sys.version.split()[0], "load_avg": os.getloadavg()},
    }


def headline(result: dict[str, Any]) -> dict[str, float]:
    """The headline figures of a full run, or of a probe, a recall check or an ingest of a kept
    index (whose JSON is that part alone)."""
    sv, rec, ing = result.get("serving", result), result.get("recall_vs_exact", result), result.get("ingest", result)
    out = {k: sv[k] for k in ("search_p50_ms", "search_p95_ms", "peak_rss_mb") if k in sv}
    scoped = sv.get("scoped") or {}
    out |= {f"scoped_{k.removeprefix('scoped_')}": scoped[k] for k in ("scoped_p50_ms", "scoped_p95_ms", "p95_ratio")
            if k in scoped}
    if "recall_at_10" in (rec.get("configured") or {}):
        out["recall_at_10"] = rec["configured"]["recall_at_10"]
    taken = (rec.get("scoped") or {}).get((rec.get("scoped") or {}).get("search_takes", ""))
    if isinstance(taken, dict) and "recall_at_10" in taken:
        out["scoped_recall_at_10"] = taken["recall_at_10"]
    out |= {f"{k}_seconds": ing[k]["seconds"] for k in ("add_100_documents", "change_100_documents")
            if isinstance(ing.get(k), dict)}
    if "index_seconds" in (result.get("build") or {}):
        out["index_seconds"] = result["build"]["index_seconds"]
    return out


def keep_result(kind: str, index_dir: str, result: dict[str, Any], note: str) -> None:
    """A probe, recall check or ingest of a kept index run by hand: its JSON to
    bench/results/scale_<kind>-<rows>.json and its headline figures to the history."""
    if os.environ.get(INSIDE):
        return
    from storage.index.chunk_index import LanceChunkIndex

    dim = int(dict(np.load(CACHE, allow_pickle=False))["vectors"].shape[1])
    rows = LanceChunkIndex(Path(index_dir), dim, "minilm").count()
    out = RESULTS / f"scale_{kind}-{rows}.json"
    out.write_text(json.dumps(result) + "\n")
    record(out.stem, headline(result), note)


def summary_md() -> str:
    """One table over every scale-<size>.json present (rewritten after each size)."""
    rows = []
    for path in sorted(RESULTS.glob("scale-*.json"), key=lambda p: int(p.stem.split("-")[1])):
        r = json.loads(path.read_text())
        sv, rec, ing = r["serving"], r["recall_vs_exact"]["configured"], r["ingest"]["change_100_documents"]
        rows.append(
            f"| {r['chunks']:,} | {sv['search_p50_ms']} / {sv['search_p95_ms']} | "
            f"{sv.get('search_cpu_p50_ms', '-')} / {sv.get('search_cpu_p95_ms', '-')} | {rec['recall_at_10']} "
            f"(nprobes {rec['nprobes']}, refine {rec['refine_factor']}) | {sv['peak_rss_mb']} | "
            f"{r['ingest']['first_suggestions_after_ingest_ms']} / {r['ingest']['suggestions_steady_p50_ms']} | "
            f"{ing['seconds']} ({ing['embed_seconds']} embedding) | {r['build']['maintenance'].get('chunks', '')} "
            f"in {r['build']['index_seconds']} s | {', '.join(f'{x:.1f}' for x in r['machine']['load_avg'])} |")
    head = ("| chunks | search p50 / p95 ms (wall) | search CPU p50 / p95 ms | recall@10 vs exact | peak RSS MB "
            "(serving) | suggestions after ingest / steady ms | 100 changed docs: s | index build | load avg |\n"
            "|---|---|---|---|---|---|---|---|---|\n")
    return head + "\n".join(rows) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10000,100000,1000000")
    ap.add_argument("--base", type=int, default=8000, help="real passages embedded (the rest are perturbed copies)")
    ap.add_argument("--queries", type=int, default=200, help="questions timed by the serving process")
    ap.add_argument("--exact", type=int, default=100, help="questions checked against exact search")
    ap.add_argument("--force", action="store_true", help="measure sizes whose result file exists")
    ap.add_argument("--grid", default="", help="nprobes:refine_factor[:ef] settings tried besides the configured "
                                               "one, e.g. 10:1:400,20:1 (default: the IVF_PQ grid)")
    ap.add_argument("--recall-only", help="only measure recall (the --grid settings and the configured one) on an "
                                          "existing index directory; prints one JSON line")
    ap.add_argument("--ingest-only", help="only measure the ingests of 100 new then changed documents (and the first "
                                          "suggestions after) into an existing index directory; prints one JSON line")
    ap.add_argument("--work", help="keep the index in this directory (one size per run) instead of a temporary one, "
                                   "to probe its serving again later with --probe WORK/index")
    ap.add_argument("--out", default="", help="result files are OUT-<size>.json (default scale-<size>.json; with "
                                              "--scopes scale_scope_tables-<size>.json, or scale_scopes-<size>.json "
                                              "when [search_index] scope_tables = false)")
    ap.add_argument("--scopes", type=int, default=0, help="spread the documents over N knowledge scopes and measure "
                                                          "scoped search against unscoped (e.g. 10)")
    ap.add_argument("--probe", help="only probe serving of an existing index directory (prints one JSON line); "
                                    "search settings from GROUNDBOT_SCALE_SETTINGS (JSON) or config.toml")
    args = ap.parse_args(argv)
    from bot.config import load_config

    cfg = load_config(ROOT / "config.toml", environ={})
    if args.probe:
        os.environ.setdefault("GROUNDBOT_SCALE_SETTINGS", json.dumps(asdict(cfg.search_index)))
        if args.scopes:
            os.environ["GROUNDBOT_SCALE_SCOPES"] = str(args.scopes)
        served = serve_probe(args.probe, args.queries)
        print(json.dumps(served))
        keep_result("probe", args.probe, served, f"--probe {args.probe} --queries {args.queries}"
                    + (f" --scopes {args.scopes}" if args.scopes else ""))
        return 0
    grid = tuple(tuple(int(x) for x in pair.split(":")) for pair in args.grid.split(",")) if args.grid else GRID
    if args.recall_only:
        from storage.index.chunk_index import LanceChunkIndex

        qv = dict(np.load(CACHE, allow_pickle=False))["qvectors"][: args.exact]
        index = LanceChunkIndex(Path(args.recall_only), qv.shape[1], "minilm", search=cfg.search_index)
        found = recall(index, qv, grid)
        if args.scopes:  # an index built with --scopes: the scoped vector leg against exact scoped search
            from bench.system.scale_scopes import scoped_recall

            found["scoped"] = scoped_recall(index, qv, args.scopes)
        print(json.dumps(found))
        keep_result("recall", args.recall_only, found, f"--recall-only --exact {args.exact}"
                    + (f" --grid {args.grid}" if args.grid else ""))
        return 0
    if args.ingest_only:
        from storage.index.chunk_index import LanceChunkIndex

        base = base_set(args.base, max(args.queries, args.exact) + 51)
        index = LanceChunkIndex(Path(args.ingest_only), base["vectors"].shape[1], "minilm", search=cfg.search_index)
        changed = changed_documents(index, base, Path(args.ingest_only).resolve().parent)
        print(json.dumps(changed))
        keep_result("ingest", args.ingest_only, changed, "--ingest-only")
        return 0
    sizes = sorted(int(s) for s in args.sizes.split(","))
    if args.work and len(sizes) != 1:
        raise SystemExit("--work keeps one index: give one size with --sizes")
    base = base_set(args.base, max(args.queries, args.exact) + 51)
    RESULTS.mkdir(parents=True, exist_ok=True)
    name = args.out or ("scale" if not args.scopes else "scale_scope_tables" if cfg.search_index.scope_tables
                        else "scale_scopes")
    for size in sizes:
        out = RESULTS / f"{name}-{size}.json"
        if out.exists() and not args.force:
            print(f"[{size}] {out} exists; skipped", flush=True)
            continue
        t0 = time.perf_counter()
        result = measure(size, base, replace(cfg.search_index), args.queries, args.exact, grid,  # type: ignore[arg-type]
                         Path(args.work).resolve() if args.work else None, args.scopes)
        result["seconds"] = round(time.perf_counter() - t0, 1)
        out.write_text(json.dumps(result, indent=2) + "\n")
        record(out.stem, headline(result), f"--sizes {size}" + (f" --scopes {args.scopes}" if args.scopes else "")
               + f", load {result['machine']['load_avg'][0]:.1f}")
        if name == "scale":
            (RESULTS / "scale.md").write_text(summary_md())
        print(f"[{size}] written to {out}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
