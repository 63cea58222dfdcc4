"""`POST /mcp` (groundbot serve): the MCP server of adapters/mcp over streamable HTTP, behind the
same door as `POST /api/ask`.

A request is let through to the SDK only once it comes from no web page of another origin (the
specification's Origin check against DNS rebinding), its bearer token is known (bot/server/scope_access.py:
the global token, a scope's token, or none where the API is open), counted by the wrong-credential
limit like every guarded route (bot/server/attempts.py), and the App is built; the caller's scope
then travels with the request to the tools, which answer and search in it alone. The SDK's
session manager runs stateless: every request stands on its own (the 2025-11-25 revision after
its `initialize`, the 2026-07-28 revision by design), so any of several workers sharing the port
can answer any request and no session lives in one worker's memory. Responses are JSON, not
event streams; there is no server-to-client stream, so GET and DELETE are answered 405.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from functools import partial
from typing import Any
from urllib.parse import urlsplit

import mcp.types as types
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import Message, Receive, Scope, Send

from adapters.mcp import PLATFORM, Asker, Knowledge, build_server, installed_version
from adapters.mcp.protocol import BATCH, is_batch
from bot.server.scope_access import ApiAccess, Caller, Refused

log = logging.getLogger("groundbot.serve")

ASKER = "groundbot.mcp.asker"  # the ASGI scope key the route hands the tools their caller under
CROSS_ORIGIN = Refused(403, "cross_origin", "/mcp answers no request from a web page of another origin")
MAX_BODY_BYTES = 1_000_000  # as POST /api/ask; a larger body gets 413, unparsed (and unread when declared)
TOO_LARGE = f"The request body is over {MAX_BODY_BYTES:,} bytes; groundbot reads none that large"


class McpRoute:
    """The ASGI endpoint of /mcp. `guard` settles who calls (a Caller, or the refusal to answer
    with); `knowledge` is the worker's App once built, `unavailable` the 503 until then."""

    def __init__(self, access: ApiAccess, guard: Callable[[Request], Awaitable[Caller | Response]],
                 knowledge: Callable[[], Knowledge | None], unavailable: Callable[[], Response],
                 refuse: Callable[[Refused], Awaitable[Response]]) -> None:
        self.access = access
        self.guard = guard
        self.refuse = refuse  # answers and records a refusal of the route
        self.knowledge = knowledge
        self.unavailable = unavailable
        server = build_server(knowledge, _asker, version=installed_version())
        self.manager = StreamableHTTPSessionManager(server, json_response=True, stateless=True,
                                                    max_request_body_size=MAX_BODY_BYTES)

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """The session manager's task group, for the worker's lifespan."""
        async with self.manager.run():
            yield

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        if not _same_origin(request):
            await (await self.refuse(CROSS_ORIGIN))(scope, receive, send)
            return
        caller = await self.guard(request)
        if isinstance(caller, Response):
            await caller(scope, receive, send)
            return
        if self.knowledge() is None:
            await self.unavailable()(scope, receive, send)
            return
        try:
            body = await _body(scope, receive)
        except _TooLarge:
            await _error(413, types.INVALID_REQUEST, TOO_LARGE)(scope, receive, send)
            return
        if body is None:  # the client left before its request was read: there is nobody to answer
            return
        if is_batch(body):  # the SDK's answer would be a validation dump echoing the requests
            await _error(400, types.INVALID_REQUEST, BATCH)(scope, receive, send)
            return
        own = self.access.own_scope(caller, PLATFORM)
        scope[ASKER] = Asker(own, caller.who, partial(self.access.key, caller, own, platform=PLATFORM))
        await self.manager.handle_request(scope, _replay(body, receive), send)


def _error(status: int, code: int, message: str) -> Response:
    """A JSON-RPC error for a request that never reached the SDK (id null: it was not read)."""
    return JSONResponse({"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}, status)


def _same_origin(request: Request) -> bool:
    """No Origin header (an agent, an editor, a script), or one naming the host the request was sent
    to: a web page elsewhere may not call /mcp from a browser, nor reach a server on the visitor's
    own machine by rebinding its DNS name to it (the MCP transport specification's Origin rule)."""
    origin = request.headers.get("origin")
    if origin is None:
        return True
    netloc = urlsplit(origin).netloc
    return bool(netloc) and netloc.lower() == request.headers.get("host", "").lower()


class _TooLarge(Exception):
    """A body over MAX_BODY_BYTES: declared so (and not read), or found so while reading."""


async def _body(scope: Scope, receive: Receive) -> bytes | None:
    """The request's body; None when the client disconnected before it was all read."""
    declared = Request(scope).headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        raise _TooLarge
    chunks, size = [], 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        chunks.append(message.get("body", b""))
        size += len(chunks[-1])
        if size > MAX_BODY_BYTES:
            raise _TooLarge
        if not message.get("more_body", False):
            return b"".join(chunks)


def _replay(body: bytes, receive: Receive) -> Receive:
    """`receive` with the body already read handed out first (the SDK reads it again), then the
    connection's own messages (a disconnect)."""
    sent = False

    async def replayed() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replayed


def _asker(request: Any) -> Asker:
    """The caller McpRoute put on the request; nothing reaches a tool without one."""
    asker = request.scope.get(ASKER) if request is not None else None
    if not isinstance(asker, Asker):
        raise RuntimeError("an MCP request reached a tool without its caller")
    return asker
