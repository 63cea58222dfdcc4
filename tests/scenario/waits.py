"""How long scenario tests wait for something to happen.

Tests wait for the event itself (a request reaching a stand-in, an ack, the adapter going
idle); this bound only decides when a wait counts as "it will never happen". It is generous
on purpose: a slow model on a loaded 2-core machine must never trip it, while a real bug
(a reply that never comes) still fails the test. Override with GROUNDBOT_TEST_WAIT_S.
"""

from __future__ import annotations

import os

WAIT_S = float(os.environ.get("GROUNDBOT_TEST_WAIT_S", "120"))
