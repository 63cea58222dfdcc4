"""The supervisor of `groundbot serve --workers N`: uvicorn's Multiprocess, with the check of its
workers done so that a dead worker is replaced at once and a slow one is not taken for hung.

uvicorn pings each worker in turn, waits up to `timeout_worker_healthcheck` for every answer,
kills a worker that does not answer in time, and only then replaces dead ones. Both halves hurt
on a busy machine: a spawned worker cannot answer until it has imported groundbot (torch,
LanceDB), which took longer than the default 5 s, so every new worker was killed in a loop; and
with the timeout raised, one slow answer held up the replacement of a worker killed meanwhile
(180 s in the first load run, bench/results/load.md). Here a dead worker (the process is gone)
is replaced on the next round, pings wait half a second, and only a worker that has not
answered one for `hung_after_s` is killed as hung.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from uvicorn.config import STARTUP_FAILURE
from uvicorn.supervisors.multiprocess import Multiprocess, Process

log = logging.getLogger("groundbot.serve")
HUNG_AFTER_S = 180.0


class Supervisor(Multiprocess):
    """uvicorn's supervisor with a dead worker replaced at once and a slow one given time."""

    def __init__(self, *args: Any, hung_after_s: float = HUNG_AFTER_S, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.hung_after_s = hung_after_s
        self._answered: dict[int, float] = {}  # worker index -> when it last answered a ping

    def keep_subprocess_alive(self) -> None:
        if self.should_exit.is_set():
            return  # stopping: nothing is replaced
        now = time.monotonic()
        for idx, process in enumerate(self.processes):
            if process.process.is_alive():
                if process.ping(timeout=0.5):
                    self._answered[idx] = now
                if now - self._answered.setdefault(idx, now) < self.hung_after_s:
                    continue
                log.warning("worker %s has not answered for %.0f s; killing it", process.pid, self.hung_after_s)
                process.kill()
            process.join()
            if process.exitcode == STARTUP_FAILURE:  # the app cannot start: restarting would fail the same way
                log.error("worker %s failed to start; stopping", process.pid)
                self.should_exit.set()
                return
            log.warning("worker %s exited with %s; starting a replacement", process.pid, process.exitcode)
            replacement = Process(self.config, self.sockets)
            replacement.start()
            self.processes[idx] = replacement
            self._answered[idx] = now
