"""Free ports on 127.0.0.1 for the servers the tests start (the `free_port` fixture of
tests/conftest.py gives a test one; module-level servers and helpers that need several call
`free_port()` itself)."""

from __future__ import annotations

import socket


def free_port() -> int:
    """A port of 127.0.0.1 that was free a moment ago: bound to port 0, read and closed, so a
    server started next can bind it; until one does, nothing listens on it."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
