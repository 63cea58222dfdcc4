"""What a synced source left behind, kept where every worker sees it: each document's page
state (its URL, ETag, Last-Modified, the version it was read at, the links a crawl found on
it), one row per sync run (the report stats, the report page and /metrics read), and the
lease that lets one worker of many sync a source at a time.

Why in the transcript database: with several `groundbot serve` workers on several machines,
only the database is shared; a page state in one worker's memory would make every other
worker fetch the whole site again. Tables are created by Alembic revision 0011.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import delete
from sqlalchemy.engine import Engine
from sqlmodel import Field, Session, SQLModel, col, func, select

from storage.records.database import aware, utcnow
from storage.records.leases import ConversationLeases

log = logging.getLogger(__name__)



class SourcePage(SQLModel, table=True):
    """One document of a synced source, as it was when last read."""

    __tablename__ = "source_page"
    source: str = Field(primary_key=True)
    doc_id: str = Field(primary_key=True)
    url: str = ""
    etag: str = ""
    last_modified: str = ""
    version: str = ""  # a Git blob id, a wiki page's version number: unchanged when equal
    links: str = "[]"  # JSON list: the pages a crawl found linked from this one
    synced_at: datetime = Field(default_factory=utcnow)


class SyncRun(SQLModel, table=True):
    """One sync of one source: what it changed, or why it failed."""

    __tablename__ = "sync_run"
    id: int | None = Field(default=None, primary_key=True)
    source: str = Field(index=True)
    started_at: datetime = Field(default_factory=utcnow)
    seconds: float = 0.0
    ok: bool = True
    added: int = 0
    updated: int = 0
    removed: int = 0
    unchanged: int = 0
    failed: int = 0  # documents that could not be read this time (kept as they were)
    error: str = ""  # why the whole source failed ("" = it did not)


@dataclass
class PageState:
    """A document's state from the last sync (what a conditional request sends back)."""

    url: str = ""
    etag: str = ""
    last_modified: str = ""
    version: str = ""
    links: list[str] = field(default_factory=list)


@dataclass
class RunCounts:
    """A sync's outcome as stored (bot/services/syncing.py builds it from the sync report)."""

    source: str
    seconds: float
    ok: bool
    added: int = 0
    updated: int = 0
    removed: int = 0
    unchanged: int = 0
    failed: int = 0
    error: str = ""

    def outcomes(self) -> dict[str, int]:
        return {"added": self.added, "updated": self.updated, "removed": self.removed,
                "unchanged": self.unchanged, "failed": self.failed}



class SourceState:
    """Page states, sync runs and sync leases over one engine (migrated by the caller)."""

    def __init__(self, engine: Engine, lease_s: float = 120.0) -> None:
        self.engine = engine
        self.lease_s = lease_s
        self.leases = ConversationLeases(engine, lease_s=lease_s)  # the lease table, shared with conversations

    # -- page states -----------------------------------------------------------------
    def pages(self, source: str) -> dict[str, PageState]:
        with Session(self.engine) as session:
            rows = session.exec(select(SourcePage).where(col(SourcePage.source) == source)).all()
        return {r.doc_id: PageState(r.url, r.etag, r.last_modified, r.version, _links(r.links)) for r in rows}

    def save_pages(self, source: str, states: dict[str, PageState], removed: Iterable[str]) -> None:
        """Write the states read this sync and forget the removed documents, in one commit.
        Called after the index was written: a worker killed in between leaves states older
        than the index, which only costs a fetch the next time, never a document skipped."""
        with Session(self.engine) as session:
            gone = [*removed, *states]
            for start in range(0, len(gone), 500):
                session.execute(delete(SourcePage).where(col(SourcePage.source) == source,
                                                         col(SourcePage.doc_id).in_(gone[start:start + 500])))
            now = utcnow()
            for doc_id, s in states.items():
                session.add(SourcePage(source=source, doc_id=doc_id, url=s.url, etag=s.etag,
                                       last_modified=s.last_modified, version=s.version,
                                       links=json.dumps(s.links[:1000]), synced_at=now))
            session.commit()

    def forget(self, source: str) -> None:
        """Drop a source's page states (its documents will be read again in full)."""
        with Session(self.engine) as session:
            session.execute(delete(SourcePage).where(col(SourcePage.source) == source))
            session.commit()

    # -- runs --------------------------------------------------------------------------
    def record_run(self, counts: RunCounts) -> None:
        with Session(self.engine) as session:
            session.add(SyncRun(source=counts.source, seconds=counts.seconds, ok=counts.ok, added=counts.added,
                                updated=counts.updated, removed=counts.removed, unchanged=counts.unchanged,
                                failed=counts.failed, error=counts.error[:2000]))
            session.commit()

    def last_runs(self) -> dict[str, SyncRun]:
        """Each source's latest sync run."""
        latest = select(func.max(SyncRun.id)).group_by(col(SyncRun.source))
        with Session(self.engine) as session:
            rows = session.exec(select(SyncRun).where(col(SyncRun.id).in_(latest))).all()
        return {r.source: r for r in rows}

    def last_success(self, source: str) -> datetime | None:
        """When the source last synced without failing (when `serve` syncs it next)."""
        with Session(self.engine) as session:
            row = session.exec(select(SyncRun).where(col(SyncRun.source) == source, col(SyncRun.ok))
                               .order_by(col(SyncRun.id).desc()).limit(1)).first()
        return aware(row.started_at) if row is not None else None

    def last_attempt(self, source: str) -> datetime | None:
        with Session(self.engine) as session:
            row = session.exec(select(SyncRun).where(col(SyncRun.source) == source)
                               .order_by(col(SyncRun.id).desc()).limit(1)).first()
        return aware(row.started_at) if row is not None else None

    # -- the sync lease ------------------------------------------------------------------
    @contextmanager
    def lease(self, source: str) -> Iterator[bool]:
        """Yield True while this worker holds `source`'s sync lease (renewed every third of
        `lease_s` until the body ends), False when another live worker holds it. A lease left
        by a killed worker expires after `lease_s` and the next sync takes it."""
        key = f"sync:{source}"
        if not self.leases.try_lease(key):
            yield False
            return
        stop = threading.Event()
        beat = threading.Thread(target=self._renew_until, args=(key, stop), daemon=True, name=f"lease-{source}")
        beat.start()
        try:
            yield True
        finally:
            stop.set()
            beat.join(timeout=5)
            try:
                self.leases.release_lease(key)
            except Exception as exc:  # it expires on its own
                log.warning("could not release sync lease %s: %s", key, str(exc).splitlines()[0][:200])

    def _renew_until(self, key: str, stop: threading.Event) -> None:
        while not stop.wait(self.lease_s / 3):
            try:
                self.leases.renew_lease(key)
            except Exception as exc:  # the next beat tries again; the lease lasts lease_s
                log.warning("could not renew sync lease %s: %s", key, str(exc).splitlines()[0][:200])

def _links(raw: str) -> list[str]:
    try:
        value = json.loads(raw or "[]")
    except ValueError:
        return []
    return [str(v) for v in value] if isinstance(value, list) else []
