"""Latency and throughput benchmark (issue: per-turn p50/p95 over a 10k-chunk index).

    python -m bench.system.latency [--chunks 10000] [--questions 300] [--out bench/results/latency.json]

Builds a knowledge base of real text (SQuAD 2.0 paragraphs, HaluEval knowledge passages,
ParsiNLU passages from ../shared/datasets), ingests it with the real ingest path (LanceDB on
disk), and measures in the same run:
  * raw encode throughput of the embedder on the very chunk texts the ingest embeds,
  * ingest throughput (chunks/s, wall clock of the whole ingest) and its ratio to raw encode,
  * per-turn latency of `App.ask` with the extractive generator (after warm-up), with the
    passage reader on (the default) and without it (the similarity gates alone),
  * turns per second of one process serving `--concurrency` conversations at once (threads, as
    `groundbot serve` runs its handlers), and the turn latency they see, with the passage reader
    on and off, and the share of the machine's cores the process kept busy,
  * verification cost of five-claim answers (core.verify.verify_answer).

    python -m bench.system.latency --verify-only [--out FILE]

times only the verifier: five-claim answers without the claim judge, and ten-claim answers with
it, as an LLM answer is verified (SQuAD paragraphs as the cited chunks). Results:
bench/results/latency.json and .md, or latency-verify.json; each run's headline figures are
appended to bench/results/history.csv.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from bench import RESULTS, ROOT
from bench.datasets import HALUEVAL_FILE, PARSINLU_FILE, SQUAD_FILE
from bench.history import record
from bench.system.leg_times import LastLegs
from bot.app import SUGGESTIONS_CHECKED_AHEAD, build_app, settle_heap
from bot.config import load_config
from core.messages import ConversationKey, Hit, Incoming
from core.settings import VerifySettings
from core.text.normalize import normalize_text
from core.verify import verify_answer
from storage.ingestion.chunker import chunk_document
from storage.ingestion.loaders import discover, load_file


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q)) if values else 0.0


def _at(result: dict[str, Any], path: str) -> Any:
    for key in path.split("."):
        result = result.get(key) if isinstance(result, dict) else None  # type: ignore[assignment]
    return result


# headline figures kept in bench/results/history.csv: (metric, where in the result)
HEADLINE = (("turn_p50_ms", "turn_latency_ms.p50"), ("turn_p95_ms", "turn_latency_ms.p95"),
            ("turn_cpu_p50_ms", "stage_p50_ms.cpu"),
            ("without_reader_turn_p50_ms", "without_reader.turn_latency_ms.p50"),
            ("without_reader_turn_p95_ms", "without_reader.turn_latency_ms.p95"),
            ("without_reader_turn_cpu_p50_ms", "without_reader.stage_p50_ms.cpu"),
            ("turns_per_s", "concurrent.turns_per_s"), ("without_reader_turns_per_s", "without_reader.concurrent.turns_per_s"),
            ("reader_turn_p50_ratio", "reader_cost.turn_p50_ratio"), ("reader_throughput_ratio", "reader_cost.throughput_ratio"),
            ("verify_five_claims_p50_ms", "verify_five_claims_ms.p50_ms"),
            ("verify_ten_claims_judged_p50_ms", "verify_ten_claims_judged_ms.p50_ms"),
            ("verify_ten_claims_judged_p95_ms", "verify_ten_claims_judged_ms.p95_ms"))


def headline(result: dict[str, Any]) -> dict[str, float]:
    return {name: v for name, path in HEADLINE if (v := _at(result, path)) is not None}


def write_corpus(folder: Path, target_chunks: int, chunk_chars: int) -> tuple[list[str], list[str]]:
    """Write passages as files until roughly `target_chunks` chunks; return (questions, passages)."""
    questions: list[str] = []
    passages: list[str] = []
    squad = json.loads(SQUAD_FILE.read_text(encoding="utf-8"))["data"] if SQUAD_FILE.exists() else []
    for art in squad:
        for para in art["paragraphs"]:
            passages.append(para["context"])
            questions.extend(q["question"] for q in para["qas"] if not q.get("is_impossible"))
    if HALUEVAL_FILE.exists():
        for line in HALUEVAL_FILE.read_text(encoding="utf-8").splitlines():
            rec = json.loads(line)
            passages.append(rec["knowledge"])
            questions.append(rec["question"])
    if PARSINLU_FILE.exists():
        for line in PARSINLU_FILE.read_text(encoding="utf-8").splitlines():
            rec = json.loads(line)
            passages.append(rec["passage"])
    if not passages:
        raise SystemExit("no datasets found under ../shared/datasets; see its README")
    approx = 0
    n = 0
    copy = 0
    while approx < target_chunks:
        for text in passages:
            # later rounds re-use the passages as separate documents; the index then holds
            # near-duplicates, which is the harder case for search, not an easier one
            (folder / f"p{n:06d}.txt").write_text(text if copy == 0 else f"(copy {copy}) {text}", encoding="utf-8")
            n += 1
            approx += max(1, -(-len(text) // chunk_chars))
            if approx >= target_chunks:
                break
        copy += 1
    return questions, passages


def chunk_texts(folder: Path, cfg: Any) -> list[str]:
    texts = []
    for path, doc_id in discover(folder):
        for c in chunk_document(load_file(path, doc_id), cfg.ingest.chunk_chars, cfg.ingest.overlap_chars, cfg.ingest.min_chunk_chars):
            texts.append(normalize_text(c.embed_text()))
    return texts


def verification_cost(passages: list[str], rounds: int = 300, claims: int = 5, judge: Any = None) -> dict[str, float]:
    """Time verify_answer on answers of `claims` cited claims drawn from real passages (one
    passage each), with the claim judge when one is given (as an LLM answer is verified)."""
    from core.text.citations import marker
    from core.text.sentences import split_claims, split_sentences

    rng = random.Random(7)
    usable = [p for p in passages if len(split_sentences(p)) >= 5]
    times: list[float] = []
    cfg = VerifySettings()
    while len(times) < rounds:
        ps = rng.sample(usable, claims)
        hits = [Hit(f"c{j}", f"d{j}", "", "", "", p, 0.8) for j, p in enumerate(ps)]
        said = [f"{split_sentences(p)[rng.randrange(5)]} {marker(j + 1)}" for j, p in enumerate(ps)]
        answer = " ".join(said)
        if len(split_claims(answer)) != claims:  # a quoted sentence that itself splits: draw again
            continue
        t0 = time.perf_counter()
        verify_answer(answer, "What do the sources say?", hits, cfg, judge, 0.1)
        times.append((time.perf_counter() - t0) * 1000)
    return {"p50_ms": round(pct(times, 50), 3), "p95_ms": round(pct(times, 95), 3), "n": rounds, "claims": claims,
            "claim_judge": judge is not None}


def verify_only(out: Path, rounds: int) -> int:
    """The verifier alone: five claims without the claim judge, ten with it (latency-verify.json by default)."""
    from bench.datasets import load_squad
    from core.settings import JudgeSettings
    from models.claim_judge import OnnxClaimJudge

    passages = [p for a in load_squad(SQUAD_FILE) for p in a.paragraphs]
    result = {"verify_five_claims_ms": verification_cost(passages, rounds),
              "verify_ten_claims_judged_ms": verification_cost(passages, rounds, 10,
                                                                    OnnxClaimJudge(threads=JudgeSettings().threads)),
              "targets": {"verify_ms": 20, "verify_ten_claims_judged_ms": 150},
              "machine": {"cpus": os.cpu_count(), "load_avg_at_end": [round(x, 2) for x in os.getloadavg()]}}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    record(out.stem, headline(result), f"--verify-only, load {result['machine']['load_avg_at_end'][0]} at end")
    print(json.dumps(result, indent=2))
    return 0


def ingest_timed(app: Any, kb: Path, cfg: Any) -> tuple[int, float, float, float]:
    """Raw encode throughput on the chunk texts, then the real ingest of the same KB, timed."""
    texts = chunk_texts(kb, cfg)
    app.embedder.embed_passages(texts[:64])  # warm the model before timing either side
    t0 = time.perf_counter()
    app.embedder.embed_passages(texts)
    raw_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    summary = app.ingest([kb])
    ingest_s = time.perf_counter() - t0
    raw_tput, ingest_tput = len(texts) / raw_s, summary.chunks_written / ingest_s
    print(f"index: {app.index.count()} chunks; raw encode {raw_tput:.1f} chunks/s; ingest {ingest_tput:.1f} chunks/s "
          f"(ratio {ingest_tput / raw_tput:.3f}; embedding {summary.embed_seconds:.1f}s of {ingest_s:.1f}s)")
    return app.index.count(), raw_tput, ingest_tput, ingest_s


def sequential(app: Any, qs: list[str], tag: str,
               read: Counter[int] | None = None) -> tuple[list[float], list[float], dict[str, list[float]], int]:
    """Ask each question in a conversation of its own, one after the other. Besides the wall
    clock, the process's CPU time per turn (all its threads: what the turn costs, whatever else
    runs on the machine) and the two search legs' times (LanceChunkIndex.observe_legs)."""
    wall: list[float] = []
    total: list[float] = []
    stages: dict[str, list[float]] = {"retrieve": [], "gate": [], "generate": [], "verify": [], "cpu": [],
                                      "vector_leg": [], "text_leg": []}
    refused = 0
    legs = LastLegs()
    observe = getattr(app.index, "observe_legs", None)  # the Lance index's; other indexes time no legs
    if observe is not None:
        observe(legs)
    for i, q in enumerate(qs):
        t0, c0 = time.perf_counter(), time.process_time()
        d = app.ask(Incoming(ConversationKey("bench", f"{tag}{i}"), "b", q))
        wall.append((time.perf_counter() - t0) * 1000)
        stages["cpu"].append((time.process_time() - c0) * 1000)
        if observe is not None:
            stages["vector_leg"].append(legs.vector_ms)
            stages["text_leg"].append(legs.text_ms)
        total.append(d.latency_ms["total"])
        refused += d.refused
        if read is not None:  # how many chunks the passage reader read (1: settled by the first)
            read[int(d.scores.get("reader_chunks_read") or 0)] += 1
        for k in ("retrieve", "gate", "generate", "verify"):
            if k in d.latency_ms:
                stages[k].append(d.latency_ms[k])
    return wall, total, stages, refused


def concurrent(app: Any, qs: list[str], conversations: int, tag: str = "") -> dict[str, Any]:
    """`conversations` threads, each a conversation asking its share of `qs` in turn."""
    per_turn: list[float] = []
    lock = threading.Lock()
    start = threading.Barrier(conversations + 1)

    def talk(c: int) -> None:
        start.wait()
        for q in qs[c::conversations]:
            t0 = time.perf_counter()
            app.ask(Incoming(ConversationKey("bench-conc", f"{tag}c{c}"), f"user{c}", q))
            with lock:
                per_turn.append((time.perf_counter() - t0) * 1000)

    threads = [threading.Thread(target=talk, args=(c,)) for c in range(conversations)]
    for t in threads:
        t.start()
    passes0 = getattr(app.embedder, "passes", 0)
    start.wait()
    t0, c0 = time.perf_counter(), time.process_time()
    for t in threads:
        t.join()
    elapsed, cpu = time.perf_counter() - t0, time.process_time() - c0
    passes = getattr(app.embedder, "passes", 0) - passes0
    return {"conversations": conversations, "turns": len(per_turn), "seconds": round(elapsed, 2),
            "turns_per_s": round(len(per_turn) / elapsed, 1), "cpu_ms_per_turn": round(1000 * cpu / len(per_turn), 2),
            "cores_busy": round(cpu / elapsed, 2), "turn_p50_ms": round(pct(per_turn, 50), 2),
            "turn_p95_ms": round(pct(per_turn, 95), 2),
            "query_texts_per_forward_pass": round(len(per_turn) / passes, 2) if passes else None}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--chunks", type=int, default=10_000, help="target index size in chunks")
    ap.add_argument("--questions", type=int, default=300, help="timed questions (after warm-up)")
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--chunk-chars", type=int, default=500, help="chunk size used for the benchmark KB")
    ap.add_argument("--prebuilt", action="store_true",
                    help="skip the ingest: write bench.system.scale's real passages and vectors straight into the index")
    ap.add_argument("--concurrency", type=int, default=16, help="conversations served at once in the throughput run")
    ap.add_argument("--concurrent-turns", type=int, default=1200,
                    help="turns of each throughput run (the timed questions asked again as needed): a run of a few "
                         "seconds swings with the machine, 1200 turns take 20-40 s")
    ap.add_argument("--out", default=str(RESULTS / "latency.json"))
    ap.add_argument("--note", default="", help="kept with the results (what else ran on the machine)")
    ap.add_argument("--verify-only", action="store_true", help="time only the verifier (5 claims; 10 with the claim judge)")
    ap.add_argument("--config", type=Path, default=ROOT / "config.toml", help="the config measured (default: the shipped one)")
    args = ap.parse_args(argv)
    if args.verify_only:
        return verify_only(Path(args.out) if args.out != str(RESULTS / "latency.json") else RESULTS / "latency-verify.json",
                           min(args.questions, 200))
    load_start = [round(x, 2) for x in os.getloadavg()]

    base = load_config(args.config, environ={})
    with tempfile.TemporaryDirectory(prefix="groundbot-latency-") as tmp:
        work = Path(tmp)
        kb = work / "kb"
        kb.mkdir()
        questions, passages = write_corpus(kb, args.chunks, args.chunk_chars)
        cfg = base.changed(paths__data_dir=work / "data", ingest=replace(
            base.ingest, chunk_chars=args.chunk_chars, overlap_chars=min(base.ingest.overlap_chars, args.chunk_chars // 4)))
        if args.prebuilt:  # the scale benchmark's real passages and vectors, written straight into the index
            from bench.system.scale import base_set, build

            real = base_set(args.chunks, args.questions + args.warmup)
            build(work / "data" / "index", real, args.chunks, cfg.search_index)
            questions, passages = [str(q) for q in real["questions"]], [str(t) for t in real["texts"]]
            app = build_app(cfg)
            n_chunks, raw_tput, ingest_tput, ingest_s = app.index.count(), None, None, None
        else:
            app = build_app(cfg)
            n_chunks, raw_tput, ingest_tput, ingest_s = ingest_timed(app, kb, cfg)
        app.pipeline.check_suggestions(SUGGESTIONS_CHECKED_AHEAD)  # as a long-running front end does at start
        wait = getattr(app.embedder, "wait_query_runtime", None)
        query_runtime = wait() if wait else "unknown"  # time questions on the runtime that serves them
        rng = random.Random(11)
        qs = rng.sample(questions, min(len(questions), args.questions + args.warmup))
        for q in qs[: args.warmup]:
            app.ask(Incoming(ConversationKey("bench", "warm"), "b", q))
        timed = qs[args.warmup :]
        # the turn without the passage reader: the similarity gates alone decide, as before the reader
        unread_app = build_app(cfg.changed(reader__enabled=False),
                               embedder=app.embedder)
        unread_app.pipeline.check_suggestions(SUGGESTIONS_CHECKED_AHEAD)
        for q in qs[: args.warmup]:
            unread_app.ask(Incoming(ConversationKey("bench", "warm-unread"), "b", q))
        settle_heap()  # as a long-running front end does once it is ready (bot.app.ready_app)
        wall_nj, _, stages_nj, refused_nj = sequential(unread_app, timed, "nj")
        chunks_read: Counter[int] = Counter()
        wall, total, stages, refused = sequential(app, timed, "q", chunks_read)
        rounds = (timed * (args.concurrent_turns // max(1, len(timed)) + 1))[: args.concurrent_turns]
        conc = concurrent(app, rounds, args.concurrency)
        print(f"concurrent, shipped (reader on): {conc}", flush=True)
        conc_nj = concurrent(unread_app, rounds, args.concurrency, "nj")
        print(f"concurrent, without the reader: {conc_nj}", flush=True)
        verify = verification_cost(passages)

    result: dict[str, Any] = {
        "index_chunks": n_chunks,
        "embedder": app.embedder.name,
        "query_runtime": query_runtime,
        "generator": "extractive",
        "turn_latency_ms": {"p50": round(pct(wall, 50), 2), "p95": round(pct(wall, 95), 2),
                            "mean": round(statistics.fmean(wall), 2), "n": len(wall)},
        "pipeline_latency_ms": {"p50": round(pct(total, 50), 2), "p95": round(pct(total, 95), 2)},
        "stage_p50_ms": {k: round(pct(v, 50), 2) for k, v in stages.items()},
        "stage_p95_ms": {k: round(pct(v, 95), 2) for k, v in stages.items()},
        "answered_share": round(1 - refused / max(1, len(wall)), 3),
        "reader_chunks_read": {str(k): v for k, v in sorted(chunks_read.items())},
        "without_reader": {"turn_latency_ms": {"p50": round(pct(wall_nj, 50), 2), "p95": round(pct(wall_nj, 95), 2)},
                          "stage_p50_ms": {k: round(pct(v, 50), 2) for k, v in stages_nj.items()},
                          "stage_p95_ms": {k: round(pct(v, 95), 2) for k, v in stages_nj.items()},
                          "answered_share": round(1 - refused_nj / max(1, len(wall_nj)), 3),
                          "concurrent": conc_nj},
        "concurrent": conc,
        "reader_cost": {"turn_p50_ratio": round(pct(wall, 50) / max(1e-9, pct(wall_nj, 50)), 3),
                        "throughput_ratio": round(conc["turns_per_s"] / max(1e-9, conc_nj["turns_per_s"]), 3),
                        "targets": {"turn_p50_ratio": 6.0, "throughput_ratio": 0.25}},
        "raw_encode_chunks_per_s": round(raw_tput, 1) if raw_tput else None,
        "ingest_chunks_per_s": round(ingest_tput, 1) if ingest_tput else None,
        "ingest_to_raw_ratio": round(ingest_tput / raw_tput, 3) if raw_tput and ingest_tput else None,
        "ingest_seconds": round(ingest_s, 1) if ingest_s else None,
        "prebuilt_index": args.prebuilt,
        "verify_five_claims_ms": verify,
        "targets": {"turn_p50_ms": 30, "turn_p95_ms": 60, "turns_per_s_16_conversations": 50, "ingest_ratio": 0.9,
                    "verify_ms": 20},
        "machine": {"cpus": os.cpu_count(), "python": sys.version.split()[0],
                    "load_avg_at_start": load_start, "load_avg_at_end": [round(x, 2) for x in os.getloadavg()]},
        "note": args.note,
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    md = out.with_suffix(".md")
    md.write_text(
        "| metric | value | target |\n|---|---|---|\n"
        f"| index size | {n_chunks} chunks | 10k |\n"
        f"| turn latency p50 (extractive, shipped: reader on, warm) | {result['turn_latency_ms']['p50']} ms | <= 30 ms |\n"
        f"| turn latency p95 (reader on) | {result['turn_latency_ms']['p95']} ms | <= 60 ms |\n"
        f"| turn latency p50 / p95, without the reader | {result['without_reader']['turn_latency_ms']['p50']} / "
        f"{result['without_reader']['turn_latency_ms']['p95']} ms | <= 30 / 60 ms |\n"
        f"| turn CPU time p50 / p95 (all threads), reader on | {result['stage_p50_ms']['cpu']} / "
        f"{result['stage_p95_ms']['cpu']} ms | |\n"
        f"| turn CPU time p50 / p95, without the reader | {result['without_reader']['stage_p50_ms']['cpu']} / "
        f"{result['without_reader']['stage_p95_ms']['cpu']} ms | |\n"
        f"| search legs p50 / p95, vector; full text | {result['stage_p50_ms']['vector_leg']} / "
        f"{result['stage_p95_ms']['vector_leg']}; {result['stage_p50_ms']['text_leg']} / "
        f"{result['stage_p95_ms']['text_leg']} ms | |\n"
        f"| {conc_nj['conversations']} concurrent conversations, without the reader | {conc_nj['turns_per_s']} turns/s "
        f"(turn p50 {conc_nj['turn_p50_ms']} ms, p95 {conc_nj['turn_p95_ms']} ms; {conc_nj['cpu_ms_per_turn']} ms CPU "
        f"per turn, {conc_nj['cores_busy']} cores busy) | >= 50 turns/s |\n"
        f"| {conc['conversations']} concurrent conversations, reader on | {conc['turns_per_s']} turns/s "
        f"(turn p50 {conc['turn_p50_ms']} ms, p95 {conc['turn_p95_ms']} ms; {conc['cpu_ms_per_turn']} ms CPU "
        f"per turn, {conc['cores_busy']} cores busy) | |\n"
        f"| reader cost: turn p50 ratio; 16-conversation throughput ratio | {result['reader_cost']['turn_p50_ratio']}; "
        f"{result['reader_cost']['throughput_ratio']} | <= 6; >= 0.25 |\n"
        f"| raw encode throughput | {result['raw_encode_chunks_per_s']} chunks/s | |\n"
        f"| ingest throughput | {result['ingest_chunks_per_s']} chunks/s | |\n"
        f"| ingest / raw encode | {result['ingest_to_raw_ratio']} | >= 0.9 |\n"
        f"| verify, 5-claim answer p50 / p95 | {verify['p50_ms']} / {verify['p95_ms']} ms | <= 20 ms |\n"
        f"| load average (1, 5, 15 min) at start; at end | {load_start}; {result['machine']['load_avg_at_end']} | |\n"
    )
    record(out.stem, headline(result), args.note or f"{n_chunks} chunks, load {load_start[0]} at start")
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
