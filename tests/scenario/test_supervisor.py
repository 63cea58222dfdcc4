"""The supervisor of `groundbot serve --workers N` (bot/server/supervisor.py) with workers that
start in a moment (tests/supervised_app.py): a killed worker is replaced, a worker that stops
beating (SIGSTOP) is killed as hung and replaced, SIGTERM stops everything with exit 0, and a
worker whose app cannot start stops the supervisor instead of being restarted forever."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import httpx
import pytest

from tests.ports import free_port
from tests.processes import ROOT, worker_pids
from tests.waits import wait_until

pytestmark = pytest.mark.processes  # each test starts groundbot serve's supervisor


@contextmanager
def supervised(which: str, hung_after_s: float = 60) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "tests.supervised_app", str(port), which, str(hung_after_s)],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        yield proc, f"http://127.0.0.1:{port}/"
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()


def _answering(url: str, proc: subprocess.Popen[bytes], n: int) -> set[int]:
    """The n worker pids, once each has answered a request."""
    seen: set[int] = set()

    def check() -> set[int] | None:
        assert proc.poll() is None, f"supervisor exited with {proc.returncode}"
        with suppress(httpx.TransportError):
            seen.add(int(httpx.get(url, timeout=2).json()["pid"]))
        alive = worker_pids(proc.pid)
        return alive if len(alive) == n and alive <= seen else None

    return wait_until(check, 60, interval=0.1, what=f"{n} answering workers")


def test_a_killed_worker_is_replaced_and_sigterm_stops_all() -> None:
    with supervised("ok") as (proc, url):
        first = _answering(url, proc, 2)
        victim = min(first)
        os.kill(victim, signal.SIGKILL)
        after = wait_until(lambda: _without(_answering(url, proc, 2), victim), 60, interval=0.1, what="a replacement")
        assert len(after) == 2 and len(after & first) == 1
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
        assert not any(os.path.exists(f"/proc/{pid}") and _is_running(pid) for pid in after)


def _without(pids: set[int], gone: int) -> set[int] | None:
    return pids if gone not in pids else None


def _is_running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def test_a_worker_that_stops_beating_is_killed_as_hung_and_replaced() -> None:
    with supervised("ok", hung_after_s=3) as (proc, url):
        first = _answering(url, proc, 2)
        frozen = min(first)
        os.kill(frozen, signal.SIGSTOP)
        wait_until(lambda: not _is_running(frozen), 30, interval=0.1, what="the hung worker to be killed")
        after = _answering(url, proc, 2)
        assert frozen not in after and len(after & first) == 1


def test_a_worker_that_cannot_start_stops_the_supervisor() -> None:
    with supervised("failing") as (proc, _url):
        assert proc.wait(60) == 3  # uvicorn's STARTUP_FAILURE, as `groundbot serve` exits
        output = proc.stdout.read().decode() if proc.stdout else ""
        assert "failed to start; stopping" in output, output
