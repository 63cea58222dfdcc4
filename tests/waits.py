"""How long tests wait for something to happen, and the one polling wait they share.

Tests wait for the event itself (a request reaching a stand-in, an ack, the adapter going
idle); this bound only decides when a wait counts as "it will never happen". It is generous
on purpose: a slow model on a loaded 2-core machine must never trip it, while a real bug
(a reply that never comes) still fails the test. Override with GROUNDBOT_TEST_WAIT_S.

Where something signals its change (the stand-ins wake their waiters on every request they
record), a test waits on that signal; `wait_until` is for what can only be looked at again.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import TypeVar

WAIT_S = float(os.environ.get("GROUNDBOT_TEST_WAIT_S", "120"))

T = TypeVar("T")


def wait_until(predicate: Callable[[], T | None], timeout: float = WAIT_S, *, interval: float = 0.05,
               what: str = "") -> T:
    """Call `predicate` every `interval` seconds until it returns something truthy, and return
    that; AssertionError (naming `what`) once `timeout` seconds have passed without it."""
    deadline = time.monotonic() + timeout
    while True:
        result = predicate()
        if result:
            return result
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what or predicate}")
        time.sleep(interval)
