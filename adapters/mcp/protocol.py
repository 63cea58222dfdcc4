"""Messages a client sends that the SDK would answer unclearly or not at all, answered with a
JSON-RPC error that says what to send instead: a batch (an array of requests, which MCP dropped in
its 2025-06-18 revision), a line that is not JSON or not a JSON-RPC message (over stdio the SDK
logs those and answers nothing, so the client would wait for ever), and a request before the
`initialize` handshake of the 2025-11-25 revision (the SDK's "Invalid request parameters")."""

from __future__ import annotations

from typing import Any

import anyio
import mcp.types as types
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

BATCH = ("JSON-RPC batches are not part of MCP (since its 2025-06-18 revision): send each request as a message "
         "of its own")
NOT_JSON = "The message is not JSON: send one JSON-RPC request per line"
NOT_A_MESSAGE = "The message is not a JSON-RPC request, notification or response"
NOT_INITIALIZED = ("Invalid request parameters: this connection is not initialized; send `initialize`, then "
                   "`notifications/initialized`, before any other request (or speak the 2026-07-28 revision, "
                   "which needs no handshake)")


def is_batch(body: bytes) -> bool:
    """A body whose JSON value is an array (read no further than its first character)."""
    return body.lstrip()[:1] == b"["


def unreadable(exc: Exception) -> types.ErrorData:
    """The error for a message the SDK could not read (`exc`, as its stdio reader hands it on)."""
    errors = exc.errors() if isinstance(exc, ValidationError) else []
    if any(e.get("type") == "json_invalid" for e in errors):
        return types.ErrorData(code=types.PARSE_ERROR, message=NOT_JSON)
    if any(isinstance(e.get("input"), list) for e in errors):
        return types.ErrorData(code=types.INVALID_REQUEST, message=BATCH)
    return types.ErrorData(code=types.INVALID_REQUEST, message=NOT_A_MESSAGE)


async def answer_unreadable(read_stream: Any, write_stream: Any, forward: Any) -> None:
    """Pass what the stdio reader read on to the server (`forward`); answer each message it could not
    read with a JSON-RPC error (id null: the message's id could not be read either)."""
    async with forward:
        async for item in read_stream:
            if isinstance(item, Exception):
                error = types.JSONRPCError(jsonrpc="2.0", id=None, error=unreadable(item))
                try:
                    await write_stream.send(SessionMessage(error))
                except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                    return
                continue
            await forward.send(item)


class ExplainNotInitialized:
    """Server middleware: the SDK's refusal of a request before `initialize` (a bare "Invalid request
    parameters", as its older releases had it) told as what it is and what to send first."""

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: Any) -> Any:
        try:
            return await call_next(ctx)
        except MCPError as exc:
            error = exc.error
            if (ctx.method != "initialize" and error.code == types.INVALID_PARAMS
                    and error.message == "Invalid request parameters" and not error.data):
                raise MCPError(types.INVALID_PARAMS, NOT_INITIALIZED) from exc
            raise
