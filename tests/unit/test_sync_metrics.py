"""Each sync of a source is counted in /metrics: its result, and its documents by outcome."""

from __future__ import annotations

from bot.server.metrics import Metrics
from storage.ingestion.ingest import IngestSummary
from storage.ingestion.sources.sync import SyncReport


def test_syncs_are_counted_by_result_and_documents_by_outcome() -> None:
    m = Metrics()
    m.observe_sync(SyncReport("site", summary=IngestSummary(added=["site:a", "site:b"], removed=["site:c"]),
                              failed=[("site:d", "HTTP 500")]))
    m.observe_sync(SyncReport("site", ok=False, error="the sitemap answered HTTP 503"))
    m.observe_sync(SyncReport("site", skipped="another worker is syncing it"))
    text = m.exposition().decode()
    for line in ('groundbot_sync_runs_total{result="ok",source="site"} 1.0',
                 'groundbot_sync_runs_total{result="failed",source="site"} 1.0',
                 'groundbot_sync_runs_total{result="skipped",source="site"} 1.0',
                 'groundbot_sync_documents_total{outcome="added",source="site"} 2.0',
                 'groundbot_sync_documents_total{outcome="removed",source="site"} 1.0',
                 'groundbot_sync_documents_total{outcome="failed",source="site"} 1.0'):
        assert line in text, line
