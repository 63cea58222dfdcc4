"""Syncing the configured sources: from the CLI (`groundbot sync`), from chat (`/reingest`, by
the admins of the scopes a source feeds) and on each source's interval in `groundbot serve`.

One sync of a source at a time everywhere: a lease in the database (storage/records/
source_state.py) is held for the whole sync, and within a process the knowledge base's lock
keeps a sync and an ingest from writing the index together. A worker that finds the lease held
reports the sync as not run, it does not wait.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path

from bot.services.hooks import Hooks
from bot.services.knowledge import KnowledgeBase
from storage.ingestion.sources.base import Connector, Progress, SourceSpec
from storage.ingestion.sources.connectors import connector_for
from storage.ingestion.sources.sync import SyncReport, sync_source
from storage.records.source_state import SourceState

log = logging.getLogger(__name__)


class UnknownSource(ValueError):
    """A sync named a source config.toml does not have (chat cannot name a new URL)."""


class Syncer:
    """The configured sources and how to sync them."""

    def __init__(self, specs: Sequence[SourceSpec], kb: KnowledgeBase, state: SourceState,
                 secret: Callable[[str], str], data_dir: Path, hooks: Hooks | None = None) -> None:
        self.specs = {s.name: s for s in specs}
        self.kb = kb
        self.state = state
        self.secret = secret
        self.data_dir = data_dir
        self.hooks = hooks or Hooks()

    def names(self) -> list[str]:
        return list(self.specs)

    def feeding(self, scope: str | None) -> list[str]:
        """The sources a scope's re-ingest syncs (every source for the whole knowledge base)."""
        return [n for n, s in self.specs.items() if scope is None or scope in s.scopes]

    def choose(self, names: Sequence[str] | None) -> list[SourceSpec]:
        """The named sources (all when none is named); an unknown name refuses them all."""
        if not names:
            return list(self.specs.values())
        unknown = [n for n in names if n not in self.specs]
        if unknown:
            known = ", ".join(self.specs) or "none are configured"
            raise UnknownSource(f"unknown source {unknown[0]!r} (sources: {known}); nothing was synced")
        return [self.specs[n] for n in dict.fromkeys(names)]

    def connector(self, spec: SourceSpec) -> Connector:
        """The reader of one source, by kind, with its secrets from the environment."""
        return connector_for(spec, self.data_dir / "sources", self.secret(spec.token_env), self.secret(spec.user_env))

    def sync(self, names: Sequence[str] | None = None, progress: Progress | None = None) -> list[SyncReport]:
        """Sync the named sources (all by default), one after another; each is reported."""
        reports = []
        for spec in self.choose(names):
            reports.append(self.sync_one(spec, progress))
        return reports

    def sync_one(self, spec: SourceSpec, progress: Progress | None = None) -> SyncReport:
        with self.state.lease(spec.name) as held:
            if not held:
                report = SyncReport(spec.name, skipped="another worker is syncing it")
            else:
                with self.kb.lock:
                    report = sync_source(spec, self.connector(spec), self.kb.index, self.kb.embedder,
                                         self.kb.chunking, self.state, progress)
        level = logging.WARNING if not report.ok else logging.INFO
        log.log(level, "sync %s", report.line())
        self.hooks.synced(report)
        return report

    def last_syncs(self, names: Sequence[str]) -> dict[str, dict[str, object]]:
        """The last sync of each named source, as stats, the report page and chat show it."""
        runs = self.state.last_runs()
        out: dict[str, dict[str, object]] = {}
        for name in names:
            r = runs.get(name)
            out[name] = {"kind": self.specs[name].kind, "synced": False} if r is None else {
                "kind": self.specs[name].kind, "synced": True, "at": r.started_at.isoformat(timespec="seconds"),
                "ok": r.ok, "added": r.added, "updated": r.updated, "removed": r.removed, "unchanged": r.unchanged,
                "failed": r.failed, "error": r.error, "seconds": r.seconds}
        return out

    def due(self, now: datetime | None = None) -> list[str]:
        """The sources whose interval has passed since their last sync attempt (for `serve`)."""
        now = now or datetime.now(UTC)
        due = []
        for name, spec in self.specs.items():
            if spec.interval <= 0:
                continue
            last = self.state.last_attempt(name)
            if last is None or (now - last).total_seconds() >= spec.interval:
                due.append(name)
        return due
