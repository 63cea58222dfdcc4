"""Processes of `groundbot serve --workers N`, for the tests and bench/system/load.py."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.waits import wait_until

ROOT = Path(__file__).resolve().parents[1]


@contextmanager
def serve_subprocess(cfg: Path, port: int, workers: int, env: dict[str, str],
                     log_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    """`python -m bot.cli.main serve` as an operator starts it, output to `log_path`; stopped with
    SIGTERM (graceful shutdown), killed if it has not stopped after 120 s."""
    with log_path.open("wb") as log:
        proc = subprocess.Popen([sys.executable, "-m", "bot.cli.main", "--config", str(cfg), "serve", "--port", str(port),
                                 "--workers", str(workers)], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            yield proc
        finally:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(120)
                except subprocess.TimeoutExpired:
                    proc.kill()


def wait_ready(url: str, proc: subprocess.Popen[bytes], log_path: Path, timeout_s: float) -> None:
    """Until `url`/readyz answers 200; fails with the log when the process dies or time runs out."""
    import httpx

    def ready() -> bool:
        assert proc.poll() is None, log_path.read_text()
        try:
            return httpx.get(url + "/readyz", timeout=5).status_code == 200
        except httpx.TransportError:
            return False

    wait_until(ready, timeout_s, interval=0.2, what="groundbot serve to become ready")


def worker_pids(supervisor: int) -> set[int]:
    """uvicorn's worker processes: the supervisor's children that run multiprocessing's spawn
    (not its resource tracker)."""
    try:
        children = Path(f"/proc/{supervisor}/task/{supervisor}/children").read_text().split()
    except OSError:
        return set()
    pids: set[int] = set()
    for pid in map(int, children):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if b"spawn_main" in cmd and b"resource_tracker" not in cmd:
            pids.add(pid)
    return pids
