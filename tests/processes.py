"""Processes of `groundbot serve --workers N`, for the tests and bench/load.py."""

from __future__ import annotations

from pathlib import Path


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
