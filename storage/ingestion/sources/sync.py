"""One sync of one source: read it (its connector), then bring the index in line in one commit.

What makes it honest: documents read are written only when they changed (their chunks' vectors
kept when their text did not); documents the source no longer has are removed from the index
and every scope table in the same commit that writes the rest; documents that could not be read
this time stay as they were; a source that fails as a whole, or that suddenly lists nothing at
all, changes nothing. Page states are stored after the index is written, so a worker killed in
between costs the next sync a fetch, never a document.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any

from storage.index.chunk_index import LanceChunkIndex
from storage.ingestion.ingest import IngestSummary, update_index
from storage.ingestion.sources.base import Connector, Progress, SourceFailed, SourceSpec
from storage.records.source_state import PageState, RunCounts, SourceState
from storage.settings import ChunkSettings

log = logging.getLogger(__name__)


@dataclass
class SyncReport:
    """What one sync of one source did (the CLI, chat, stats, the report page and /metrics show it)."""

    source: str
    ok: bool = True
    error: str = ""
    skipped: str = ""  # why it did not run (another worker holds its lease)
    summary: IngestSummary = field(default_factory=IngestSummary)
    failed: list[tuple[str, str]] = field(default_factory=list)
    fetched: int = 0
    seconds: float = 0.0

    def counts(self) -> RunCounts:
        s = self.summary
        return RunCounts(self.source, round(self.seconds, 3), self.ok, len(s.added), len(s.updated),
                         len(s.removed), len(s.unchanged), len(self.failed), self.error)

    def line(self) -> str:
        if self.skipped:
            return f"{self.source}: not synced ({self.skipped})"
        if not self.ok:
            return f"{self.source}: FAILED, nothing changed ({self.error})"
        c = self.counts()
        text = (f"{self.source}: added {c.added}, updated {c.updated}, removed {c.removed}, "
                f"unchanged {c.unchanged}, failed {c.failed} in {self.seconds:.1f}s")
        if self.failed:
            text += "; " + "; ".join(f"{d} ({why[:120]})" for d, why in self.failed[:3])
        return text

    def to_dict(self) -> dict[str, Any]:
        c = self.counts()
        return {"source": self.source, "ok": self.ok, "error": self.error, "skipped": self.skipped,
                "added": self.summary.added, "updated": self.summary.updated, "removed": self.summary.removed,
                "unchanged": c.unchanged, "failed": [{"doc_id": d, "reason": r} for d, r in self.failed],
                "requests": self.fetched, "seconds": round(self.seconds, 3),
                "chunks_written": self.summary.chunks_written, "index_version": self.summary.index_version}


def _scopes_in(stored_hash: str) -> str:
    return stored_hash.split("|", 1)[1] if "|" in stored_hash else ""


def usable_states(spec: SourceSpec, states: dict[str, PageState], existing: dict[str, tuple[str, str]]) -> dict[str, PageState]:
    """The stored states a connector may answer "unchanged" from: only documents the index has,
    stored with the scopes the source feeds now (else they must be read and written again)."""
    wanted = ",".join(sorted(spec.scopes))
    return {d: s for d, s in states.items() if d in existing and _scopes_in(existing[d][1]) == wanted}


def sync_source(spec: SourceSpec, connector: Connector, index: LanceChunkIndex, embedder: Any,
                chunking: ChunkSettings, state: SourceState, progress: Progress | None = None) -> SyncReport:
    """Read `spec`'s source and write what changed; the run is recorded whatever happens."""
    t0 = time.perf_counter()
    report = SyncReport(spec.name)
    try:
        existing = index.existing_docs()
        mine = {d for d, (source, _) in existing.items() if source.startswith(spec.source_prefix)}
        known = usable_states(spec, state.pages(spec.name), existing)
        collected = connector.collect(known, progress)
        report.fetched = collected.fetched
        report.failed = collected.failed
        kept = collected.kept | {d for d, _ in collected.failed if d in mine}
        if mine and not collected.docs and not kept:
            raise SourceFailed(f"it listed no documents; its {len(mine)} documents are kept as they were")
        scopes = sorted(spec.scopes)
        report.summary = update_index(collected.docs, index, embedder, chunking, progress,
                                      scopes_of=lambda _source: scopes,
                                      owned=lambda source: source.startswith(spec.source_prefix), kept=kept)
        read = {d.doc_id for d in collected.docs}
        state.save_pages(spec.name, {d: s for d, s in collected.states.items() if d in read or d in collected.kept},
                         report.summary.removed)
    except SourceFailed as exc:
        report.ok, report.error = False, str(exc)
    except Exception as exc:  # a connector's bug or a library's surprise: reported, never a crash
        log.exception("sync of %s failed", spec.name)
        report.ok, report.error = False, f"{type(exc).__name__}: {str(exc)[:300]}"
    finally:
        connector.close()
    report.seconds = time.perf_counter() - t0
    try:
        state.record_run(report.counts())
    except Exception as exc:  # the sync itself is done; its record is best effort
        log.warning("could not record the sync of %s: %s", spec.name, str(exc).splitlines()[0][:200])
    return report
