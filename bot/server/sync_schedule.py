"""`groundbot serve` syncs each source on its own interval ([[sources]] interval), from every
worker's schedule thread; the lease per source in the database (storage/records/source_state.py)
lets one of them run it while the others find it held and move on. A worker killed mid-sync
leaves the index as its last commit left it; the lease expires and the next due check syncs again.
"""

from __future__ import annotations

import logging
import threading

from bot.services.syncing import Syncer

log = logging.getLogger("groundbot.sync")


class SyncSchedule:
    """A daemon thread that syncs the due sources every `check_s` seconds until stopped."""

    def __init__(self, syncer: Syncer, check_s: float) -> None:
        self.syncer = syncer
        self.check_s = check_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._thread is None and any(s.interval > 0 for s in self.syncer.specs.values()):
            self._thread = threading.Thread(target=self._run, daemon=True, name="sync-schedule")
            self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                for name in self.syncer.due():
                    if self._stop.is_set():
                        break
                    self.syncer.sync([name])
            except Exception:  # the database away, a bug: logged, and tried again next round
                log.exception("scheduled sync failed")
            self._stop.wait(self.check_s)

    def stop(self, wait_s: float = 5.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=wait_s)
