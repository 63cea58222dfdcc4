"""Syncing a real documentation website: the first sync, a re-sync with nothing changed, and a
re-sync with one page changed, through a real HTTP server on 127.0.0.1 serving a copy of
../shared/sites/starlette-docs (25 pages in its sitemap), cited under its public URL.

    python -m bench.system.sync              # 3 unchanged re-syncs (median reported)
    python -m bench.system.sync --repeat 5

Target (issue 50): an unchanged re-sync costs at most 5% of the first sync's time. Results:
bench/results/sync.json and sync.md; the headline figures are appended to bench/results/history.csv.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import ROOT
from bench.history import record
from bench.system.site_server import SiteServer

SITE = ROOT.parent / "shared" / "sites" / "starlette-docs"
RESULTS = ROOT / "bench" / "results"


def run(repeat: int) -> dict[str, Any]:
    from bot.app import build_app
    from bot.config import Config
    from bot.source_settings import parse_sources

    tmp = Path(tempfile.mkdtemp(prefix="groundbot-sync-bench-"))
    try:
        root = tmp / "site"
        shutil.copytree(SITE, root)
        with SiteServer(root) as server:
            spec = parse_sources([{"name": "starlette", "kind": "web", "url": server.base + "sitemap.xml",
                                   "public_url": "https://www.starlette.io/", "allow_private_addresses": True,
                                   "requests_per_second": 100, "concurrency": 4}])
            app = build_app(Config().changed(paths__data_dir=tmp / "data", paths__kb_paths=(), sources=spec))
            t0 = time.perf_counter()
            [first] = app.syncer.sync()
            first_s = time.perf_counter() - t0
            assert first.ok and len(first.summary.added) == 25, first.line()
            again = []
            for _ in range(repeat):
                server.requests.clear()
                t0 = time.perf_counter()
                [r] = app.syncer.sync()
                again.append(time.perf_counter() - t0)
                assert r.ok and len(r.summary.unchanged) == 25, r.line()
            downloads = sum(1 for path, status in server.requests if status == 200 and not path.endswith(".xml"))
            page = root / "staticfiles" / "index.html"
            page.write_text(page.read_text(encoding="utf-8").replace("Starlette also includes a", "Starlette ships a", 1),
                            encoding="utf-8")
            t0 = time.perf_counter()
            [one] = app.syncer.sync()
            one_s = time.perf_counter() - t0
            assert one.summary.updated == ["starlette:staticfiles/"], one.line()
        unchanged = statistics.median(again)
        return {
            "pages": 25, "first_sync_s": round(first_s, 3), "first_pages_per_s": round(25 / first_s, 2),
            "first_chunks_written": first.summary.chunks_written,
            "unchanged_resync_s": round(unchanged, 4), "unchanged_resync_runs_s": [round(x, 4) for x in again],
            "unchanged_share_of_first": round(unchanged / first_s, 5),
            "unchanged_pages_downloaded": downloads,
            "one_page_changed_resync_s": round(one_s, 3), "one_page_changed_share_of_first": round(one_s / first_s, 4),
            "embedder": app.embedder.name,
        }
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def markdown(r: dict[str, Any]) -> str:
    return "\n".join([
        "# Sync of a documentation website (starlette-docs, 25 pages, served on 127.0.0.1)",
        "",
        "`python -m bench.system.sync`",
        "",
        "| figure | value |",
        "|---|---|",
        f"| first sync | {r['first_sync_s']} s ({r['first_pages_per_s']} pages/s, {r['first_chunks_written']} chunks) |",
        f"| unchanged re-sync (median) | {r['unchanged_resync_s']} s, {r['unchanged_pages_downloaded']} pages downloaded |",
        f"| unchanged re-sync / first sync | {r['unchanged_share_of_first']:.2%} (target <= 5%) |",
        f"| re-sync with one page changed | {r['one_page_changed_resync_s']} s "
        f"({r['one_page_changed_share_of_first']:.1%} of the first) |",
        "",
    ])


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeat", type=int, default=3, help="unchanged re-syncs to time (median reported)")
    args = p.parse_args()
    result = run(max(1, args.repeat))
    (RESULTS / "sync.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    (RESULTS / "sync.md").write_text(markdown(result), encoding="utf-8")
    record("sync", {k: v for k, v in result.items() if k in (
        "first_pages_per_s", "first_sync_s", "unchanged_resync_s", "unchanged_share_of_first",
        "one_page_changed_resync_s")}, "starlette-docs, 25 pages, 127.0.0.1")
    print(markdown(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
