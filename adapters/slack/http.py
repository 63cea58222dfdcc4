"""The Events API over HTTP: bolt's Starlette adapter as an endpoint (mounted by `groundbot
serve`), and a small uvicorn server around it alone (`groundbot slack --http`)."""

from __future__ import annotations

import socket
import threading
from collections.abc import Awaitable, Callable

import uvicorn
from slack_bolt import App as BoltApp
from slack_bolt.adapter.starlette.handler import to_bolt_request, to_starlette_response
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

MAX_HTTP_BODY = 1_000_000  # Slack payloads are a few KB; anything this big is not from Slack


def events_endpoint(app: BoltApp) -> Callable[[Request], Awaitable[Response]]:
    """A Starlette endpoint for the Events API, slash commands and interactivity.

    bolt's own Starlette adapter converts the request and the response; bolt verifies the
    signature (401 otherwise), acks and dispatches. Dispatch runs on a worker thread because
    the middleware may touch a database and the listener hand-off must not stall the event loop.
    """

    async def endpoint(request: Request) -> Response:
        body = await request.body()
        if len(body) > MAX_HTTP_BODY:
            return PlainTextResponse("too large", status_code=413)
        response = await run_in_threadpool(app.dispatch, to_bolt_request(request, body))
        return to_starlette_response(response)

    return endpoint


class SlackHTTPServer:
    """The Events API endpoint on uvicorn (`groundbot slack --http`); put TLS in front.

    `groundbot serve` mounts the same endpoint next to its other routes; this class serves it
    alone, with `GET /healthz`. The port is bound at construction, so port 0 gives a free one.
    """

    def __init__(self, app: BoltApp, host: str, port: int, path: str) -> None:
        async def healthz(request: Request) -> Response:
            return PlainTextResponse("ok")

        asgi = Starlette(routes=[Route(path, events_endpoint(app), methods=["POST"]),
                                 Route("/healthz", healthz, methods=["GET"])])
        self.path = path
        self.socket = socket.create_server((host, port), reuse_port=False)
        self.server = uvicorn.Server(uvicorn.Config(asgi, log_level="warning", lifespan="off",
                                                    timeout_graceful_shutdown=30))
        self._done = threading.Event()

    @property
    def port(self) -> int:
        return int(self.socket.getsockname()[1])

    def serve_forever(self) -> None:
        try:
            self.server.run(sockets=[self.socket])
        finally:
            self._done.set()

    def shutdown(self, timeout: float = 60.0) -> None:
        """Stop taking requests, finish those in flight, close the socket."""
        self.server.should_exit = True
        if self.server.started or not self._done.is_set():
            self._done.wait(timeout if self.server.started else 0.5)
        self.socket.close()
