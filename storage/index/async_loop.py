"""An asyncio event loop on a daemon thread, owned by groundbot, for LanceDB's async API.

Why: the chunk index is called from synchronous code (the turn pipeline, the CLI, ingest), but
its two search legs are sent to LanceDB together through the public async API
(`lancedb.connect_async`, `AsyncTable`), which needs a running loop. One loop per process, on
its own thread, so a caller crosses to it once per search and every async LanceDB object lives
on the loop that created it. A child made by fork gets a fresh loop (the parent's thread does
not exist there).
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class AsyncLoop:
    """Runs coroutines to completion on one background event loop, started on first use."""

    def __init__(self, name: str = "groundbot-lancedb") -> None:
        self.name = name
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pid = 0

    def loop(self) -> asyncio.AbstractEventLoop:
        """The running loop of this process (started, or restarted after a fork, here)."""
        with self._lock:
            if self._loop is None or self._pid != os.getpid():
                loop = asyncio.new_event_loop()
                threading.Thread(target=loop.run_forever, name=self.name, daemon=True).start()
                self._loop, self._pid = loop, os.getpid()
            return self._loop

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """The coroutine's result (or its exception), waited for on the calling thread."""
        loop = self.loop()
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:  # called from the loop itself: waiting here would never end
            coro.close()
            raise RuntimeError("AsyncLoop.run called from its own loop")
        return asyncio.run_coroutine_threadsafe(coro, loop).result()


LANCE_LOOP = AsyncLoop()
