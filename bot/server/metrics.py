"""Prometheus metrics of `groundbot serve`: what an operator graphs and alerts on.

Each served App gets its own registry (tests run several in one process). With several worker
processes, prometheus_client's multiprocess mode sums the workers' counters at scrape time: the
supervisor gives every worker the same `metrics_dir` (see bot/server/http_app.py).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from core import reasons
from core.messages import Decision
from storage.ingestion.sources.sync import SyncReport

STAGE_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


def use_prometheus_multiprocess(directory: str) -> None:
    """Point prometheus_client's multiprocess mode at `directory` for worker processes started
    after this call. The library reads this variable itself, in the spawned workers, so it is
    set here, once, by the supervisor; it is the one environment variable groundbot writes."""
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = directory


class _QueueDepth(Collector):
    """Review-queue depth, read from the database at scrape time (it is shared by all workers)."""

    def __init__(self, depth: Callable[[], int | None]) -> None:
        self.depth = depth

    def collect(self) -> list[GaugeMetricFamily]:
        value = self.depth()
        if value is None:
            return []
        return [GaugeMetricFamily("groundbot_review_queue_depth", "Turns waiting for an admin's review", value=value)]


class Metrics:
    """Counters and histograms of turns, LLM failures, feedback and ingest runs."""

    def __init__(self, multiprocess_dir: Path | None = None) -> None:
        self.multiprocess_dir = multiprocess_dir
        self._queue: _QueueDepth | None = None
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.turns = Counter("groundbot_turns", "Turns answered or refused, by outcome and reason code",
                             ["outcome", "reason"], registry=r)
        self.scope_turns = Counter("groundbot_scope_turns", "Turns per knowledge scope, by outcome (scopes set only)",
                                   ["scope", "outcome"], registry=r)
        self.stage_seconds = Histogram("groundbot_stage_seconds", "Latency of each stage of a turn", ["stage"],
                                       buckets=STAGE_BUCKETS, registry=r)
        self.llm_errors = Counter("groundbot_llm_errors", "LLM calls that failed, by kind (timeout or error)",
                                  ["kind"], registry=r)
        self.feedback = Counter("groundbot_feedback", "Thumbs up and down stored", ["value"], registry=r)
        self.ingest_runs = Counter("groundbot_ingest_runs", "Re-ingests run from chat, by result", ["result"], registry=r)
        self.deliveries_skipped = Counter("groundbot_duplicate_deliveries", "Platform re-deliveries not answered again",
                                          ["platform"], registry=r)
        self.deliveries_taken_over = Counter("groundbot_deliveries_taken_over",
                                             "Deliveries answered for a worker that died after taking them",
                                             ["platform"], registry=r)
        self.sync_runs = Counter("groundbot_sync_runs", "Syncs of [[sources]], by source and result (ok, failed, skipped)",
                                 ["source", "result"], registry=r)
        self.sync_documents = Counter("groundbot_sync_documents", "Documents a sync added, updated, removed, kept "
                                      "unchanged or failed to read, by source", ["source", "outcome"], registry=r)
        self.access_refused = Counter("groundbot_access_refused",
                                      "Requests refused access, by route, who (a token's holder, never the token), "
                                      "the scope asked for and why", ["route", "who", "scope", "reason"], registry=r)
        self.ready = Gauge("groundbot_ready", "1 once the database, the index and the model are ready", registry=r,
                           multiprocess_mode="max")

    def watch_review_queue(self, depth: Callable[[], int | None]) -> None:
        self._queue = _QueueDepth(depth)
        self.registry.register(self._queue)

    def observe(self, decision: Decision) -> None:
        """Count one finished turn."""
        if decision.refused:
            outcome, reason = "refused", str(decision.refusal_reason or "UNKNOWN")
        else:
            outcome, reason = ("pending_review" if decision.held else "answered"), ""
        self.turns.labels(outcome, reason).inc()
        if decision.scope is not None:
            self.scope_turns.labels(decision.scope, outcome).inc()
        for stage, ms in decision.latency_ms.items():
            self.stage_seconds.labels(stage).observe(max(0.0, float(ms)) / 1000.0)
        if reasons.LLM_UNAVAILABLE in decision.reasons or decision.refusal_reason == reasons.LLM_UNAVAILABLE:
            kind = "timeout" if "timeout" in decision.detail.lower() else "error"
            self.llm_errors.labels(kind).inc()

    def observe_sync(self, report: SyncReport) -> None:
        """Count one sync of a source."""
        result = "skipped" if report.skipped else ("ok" if report.ok else "failed")
        self.sync_runs.labels(report.source, result).inc()
        if report.ok and not report.skipped:
            for outcome, n in report.counts().outcomes().items():
                self.sync_documents.labels(report.source, outcome).inc(n)

    def exposition(self) -> bytes:
        """The text format for GET /metrics (all workers' values in multiprocess mode)."""
        if self.multiprocess_dir is None:
            return generate_latest(self.registry)
        from prometheus_client import multiprocess

        merged = CollectorRegistry()
        multiprocess.MultiProcessCollector(merged, path=str(self.multiprocess_dir))
        if self._queue is not None:  # read from the database at scrape time, not summed
            merged.register(self._queue)
        return generate_latest(merged)
