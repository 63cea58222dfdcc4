"""The supervisor of `groundbot serve --workers N`: N spawned worker processes, each running
uvicorn's `Server.run` on the one socket bound here; a dead worker is replaced at once, a hung
one is killed and replaced, a worker whose app cannot start stops the whole server.

Why groundbot's own, on public APIs only (multiprocessing's spawn context, `socket`,
`uvicorn.Config` and `uvicorn.Server.run(sockets=...)`): uvicorn's `Multiprocess` is
undocumented and changes between releases, and gunicorn forks its workers from a process that
has already loaded LanceDB, whose runtime threads do not survive a fork. Spawned workers import
groundbot afresh.

How a worker is judged: each beats a shared timestamp from a thread once a second (as uvicorn's
pong thread answered its pings: a process stuck holding the interpreter stops beating). A
worker still importing groundbot (torch and LanceDB import slowly, more so on a busy machine) is
not taken for hung; one that has not beaten for `hung_after_s` is (judged by its answers instead,
a slow answer would hold up the replacement of a killed worker). A dead worker (the process is
gone) is replaced on the next round, every half second.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import os
import signal
import socket
import threading
import time
from dataclasses import dataclass, field
from multiprocessing.context import SpawnProcess
from multiprocessing.sharedctypes import Synchronized
from types import FrameType
from typing import Any

import uvicorn
from uvicorn.config import STARTUP_FAILURE

log = logging.getLogger("groundbot.serve")
HUNG_AFTER_S = 180.0
BEAT_S = 1.0
ROUND_S = 0.5
_SPAWN = multiprocessing.get_context("spawn")


def bind(host: str, port: int, backlog: int = 2048) -> socket.socket:
    """The listening socket every worker accepts on (bound once, here, before any worker)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(backlog)
    sock.set_inheritable(True)
    return sock


def _beat(stamp: Synchronized) -> None:  # type: ignore[type-arg]
    while True:
        stamp.value = time.monotonic()
        time.sleep(BEAT_S)


def run_worker(config: uvicorn.Config, sockets: list[socket.socket], stamp: Synchronized) -> None:  # type: ignore[type-arg]
    """A worker process: beat, then serve until told to stop (uvicorn exits with STARTUP_FAILURE
    when the app's startup fails)."""
    threading.Thread(target=_beat, args=(stamp,), name="groundbot-beat", daemon=True).start()
    config.configure_logging()
    with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C reaches the whole group; the supervisor stops us
        uvicorn.Server(config).run(sockets=sockets)


@dataclass
class Worker:
    process: SpawnProcess
    stamp: Synchronized  # type: ignore[type-arg]
    started: float = field(default_factory=time.monotonic)

    def last_beat(self) -> float:
        return max(self.started, float(self.stamp.value))


class Supervisor:
    """Starts `workers` processes serving `config` on `sock` and keeps that many alive until
    SIGINT or SIGTERM, then stops them gracefully (uvicorn's own shutdown in each worker)."""

    def __init__(self, config: uvicorn.Config, sock: socket.socket, workers: int,
                 hung_after_s: float = HUNG_AFTER_S, stop_timeout_s: float = 90.0) -> None:
        self.config = config
        self.sockets = [sock]
        self.count = workers
        self.hung_after_s = hung_after_s
        self.stop_timeout_s = stop_timeout_s
        self.workers: list[Worker] = []
        self.should_exit = threading.Event()
        self.failed = False  # a worker's app could not start

    def _start(self) -> Worker:
        stamp = _SPAWN.Value("d", 0.0, lock=False)
        process = _SPAWN.Process(target=run_worker, args=(self.config, self.sockets, stamp), name="groundbot-worker")
        process.start()
        return Worker(process, stamp)  # type: ignore[arg-type]

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        log.info("received %s; stopping the workers", signal.Signals(signum).name)
        self.should_exit.set()

    def run(self) -> int:
        """Serve until stopped: 0, or STARTUP_FAILURE when a worker's app could not start."""
        previous: dict[int, Any] = {s: signal.signal(s, self._on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            self.workers = [self._start() for _ in range(self.count)]
            while not self.should_exit.wait(ROUND_S):
                self.keep_workers_alive()
        finally:
            self.stop_all()
            for s, handler in previous.items():
                signal.signal(s, handler)
        return STARTUP_FAILURE if self.failed else 0

    def keep_workers_alive(self) -> None:
        """One round: kill a worker that stopped beating, replace every worker that is gone."""
        now = time.monotonic()
        for idx, worker in enumerate(self.workers):
            if self.should_exit.is_set():
                return  # stopping: nothing is replaced
            process = worker.process
            if process.is_alive():
                if now - worker.last_beat() < self.hung_after_s:
                    continue
                log.warning("worker %s has not answered for %.0f s; killing it", process.pid, self.hung_after_s)
                process.kill()
            process.join()
            if process.exitcode == STARTUP_FAILURE:  # the app cannot start: restarting would fail the same way
                log.error("worker %s failed to start; stopping", process.pid)
                self.failed = True
                self.should_exit.set()
                return
            log.warning("worker %s exited with %s; starting a replacement", process.pid, process.exitcode)
            self.workers[idx] = self._start()

    def stop_all(self) -> None:
        """SIGTERM to every worker (uvicorn finishes the requests in flight), then wait; a worker
        still there after `stop_timeout_s` is killed."""
        for worker in self.workers:
            if worker.process.is_alive() and worker.process.pid is not None:
                os.kill(worker.process.pid, signal.SIGTERM)
        deadline = time.monotonic() + self.stop_timeout_s
        for worker in self.workers:
            worker.process.join(max(0.0, deadline - time.monotonic()))
            if worker.process.is_alive():
                log.warning("worker %s did not stop in %.0f s; killing it", worker.process.pid, self.stop_timeout_s)
                worker.process.kill()
                worker.process.join()
