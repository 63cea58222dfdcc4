"""`groundbot serve --workers 2` on the real PostgreSQL server syncing a website on its interval:
both workers are killed in the middle of the first sync; the index is left as it was,
the supervisor's new workers wait out the dead holder's lease, one of them syncs (the other finds
the lease held) and the answers then cite the synced pages."""

from __future__ import annotations

import os
import shutil
import signal
import threading
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import create_engine, text

from bench.system.site_server import SiteServer
from tests.processes import serve_subprocess, worker_pids
from tests.scenario.test_serve import API_TOKEN
from tests.scenario.test_serve_workers import ready_workers
from tests.scenario.test_sources_web import site  # noqa: F401  (the lighthouse site on 127.0.0.1)
from tests.waits import WAIT_S, wait_until

pytestmark = pytest.mark.processes


def rows(db_url: str, sql: str) -> list[Any]:
    engine = create_engine(db_url)
    try:
        with engine.connect() as conn:
            return list(conn.execute(text(sql)))
    finally:
        engine.dispose()


def test_two_workers_sync_once_and_a_sync_killed_midway_is_completed_by_the_next(
        tmp_path: Path, site: SiteServer, postgres_server: Any, docs_index: Path, free_port: int) -> None:  # noqa: F811
    db_url = postgres_server.url()
    data = tmp_path / "data"
    shutil.copytree(docs_index, data / "index")  # the bundled docs, ingested as an operator does first
    cfg = tmp_path / "config.toml"
    cfg.write_text(f'[paths]\ndata_dir = "{data.as_posix()}"\n[storage]\ndatabase_url = "{db_url}"\n'
                   "[serve]\nsync_check_s = 1.0\nsync_lease_s = 3.0\n"
                   f'[[sources]]\nname = "manual"\nkind = "web"\nurl = "{site.base}"\ninterval = "1h"\n'
                   "allow_private_addresses = true\nmax_depth = 2\n",
                   encoding="utf-8")
    port, url = free_port, f"http://127.0.0.1:{free_port}"
    env = {**os.environ, "GROUNDBOT_API_TOKEN": API_TOKEN}
    site.hold = threading.Event()  # the first page waits: the sync is caught in the middle
    with serve_subprocess(cfg, port, 2, env, tmp_path / "serve.log") as proc:
        first = ready_workers(url, proc, 2)
        wait_until(lambda: "/" in site.arrived, WAIT_S, interval=0.2, what="the sync to start")
        for pid in worker_pids(proc.pid):  # mid-sync: robots.txt read, the start page asked for, nothing written
            os.kill(pid, signal.SIGKILL)
        site.hold.set()
        assert rows(db_url, "SELECT count(*) FROM sync_run")[0][0] == 0
        assert rows(db_url, "SELECT count(*) FROM source_page")[0][0] == 0
        replaced = ready_workers(url, proc, 2)
        assert not replaced & first
        done = wait_until(lambda: rows(db_url, "SELECT ok, added FROM sync_run"), WAIT_S * 2, interval=0.2, what="a finished sync")
        assert [(bool(ok), added) for ok, added in done] == [(True, 4)]
        assert rows(db_url, "SELECT count(*) FROM source_page")[0][0] == 4
        r = httpx.post(url + "/api/ask", json={"question": "How often is the lamp of the lighthouse changed?"},
                       headers={"Authorization": f"Bearer {API_TOKEN}"}, timeout=WAIT_S)
        assert site.base + "lamps/" in [s["url"] for s in r.json()["sources"]]
        def sync_lines() -> list[str]:
            return [line for line in httpx.get(url + "/metrics", timeout=WAIT_S).text.splitlines() if "sync" in line]

        metrics = wait_until(lambda: (lines := sync_lines()) and any('result="ok"' in x for x in lines) and lines,
                             WAIT_S, interval=0.2, what="the sync counted in /metrics")
        assert 'groundbot_sync_runs_total{result="ok",source="manual"} 1.0' in metrics
        assert 'groundbot_sync_documents_total{outcome="added",source="manual"} 4.0' in metrics
    assert rows(db_url, "SELECT count(*) FROM sync_run")[0][0] == 1  # the other worker never synced it again
