"""Tiny ASGI apps for the supervisor's own test (tests/scenario/test_supervisor.py): workers that
start in a moment, so killing, hanging and replacing them is fast. Run as
`python -m tests.supervised_app PORT ok|failing HUNG_AFTER_S`."""

from __future__ import annotations

import json
import os
import sys
from typing import Any


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """Answers every request with the worker's pid."""
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    body = json.dumps({"pid": os.getpid()}).encode()
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": body})


async def failing_app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """An app whose startup fails (as groundbot's does with a broken config)."""
    if scope["type"] == "lifespan":
        await receive()
        await send({"type": "lifespan.startup.failed", "message": "no index"})


def main(argv: list[str]) -> int:
    import uvicorn

    from bot.server.supervisor import Supervisor, bind
    from tests.supervised_app import app as ok  # pickled by the module's real name, not __main__
    from tests.supervised_app import failing_app as failing

    port, which, hung_after_s = int(argv[0]), argv[1], float(argv[2])
    config = uvicorn.Config(ok if which == "ok" else failing, host="127.0.0.1", port=port,
                            log_config=None, log_level="warning", lifespan="on", timeout_graceful_shutdown=5)
    with bind("127.0.0.1", port) as sock:
        return Supervisor(config, sock, 2, hung_after_s=hung_after_s, stop_timeout_s=15).run()


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
