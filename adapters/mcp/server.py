"""groundbot's MCP server: the official SDK's low-level Server with the two tools of
adapters/mcp/tools.py, served over streamable HTTP by `groundbot serve` (bot/server/mcp_route.py)
or over stdio by `groundbot mcp` (bot/cli/mcp.py).

Who calls (the knowledge scope it may read, and the namespace of its conversations) is the
transport's to say: `asker` reads it from the HTTP request the route authenticated, or returns
the one caller of a stdio process. An `ask` is one turn through the backend, recorded like any
chat message (platform "mcp"); a `search` reads the index and records nothing. The backend's
work is blocking (models, LanceDB, the database), so it runs on a worker thread; a client that
goes away mid-call (a dropped connection, a closed stdin) leaves the turn to finish and be recorded.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, Protocol

import anyio
import mcp.types as types
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError

from adapters.mcp.contract import BadArguments
from adapters.mcp.protocol import ExplainNotInitialized, answer_unreadable
from adapters.mcp.results import ask_result, bad_arguments, refused_call, search_result
from adapters.mcp.tools import ASK, CONTRACTS, INPUTS, SEARCH, TOOLS, AskArgs, SearchArgs
from core.catalogue import explain
from core.messages import NOT_SET_UP, ConversationKey, Decision, Hit, Incoming, Platform
from core.reasons import CHAT_NOT_SET_UP, INPUT_REJECTED
from core.text.language import language_of

PLATFORM = Platform.MCP
log = logging.getLogger("groundbot.mcp")

INSTRUCTIONS = (
    "groundbot answers questions from this team's knowledge base and cites its sources. Call `ask` for an "
    "answer verified against the documents, or a refusal with its reason when they do not answer; call "
    "`search` to read the passages yourself."
)


def installed_version() -> str:
    """groundbot's version as installed, for `serverInfo` ("" when run from a tree not installed)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("groundbot")
    except PackageNotFoundError:
        return ""


class Knowledge(Protocol):
    """What the tools ask of groundbot (bot.app.App implements it)."""

    def ask(self, msg: Incoming) -> Decision: ...

    def passages(self, query: str, k: int, scope: str | None = None) -> tuple[list[Hit], str]:
        """The `k` passages a turn would read for `query` in `scope`, best first; or why the query
        cannot be searched (empty, binary, too long), with no passages."""
        ...


@dataclass(frozen=True)
class Asker:
    """The caller of a tool, as its turn needs it: the knowledge scope it reads (None: the whole
    knowledge base; NOT_SET_UP: none serves it), the user id its turns are recorded with, and
    its conversations' keys (another caller's conversation id is another conversation)."""

    scope: str | None
    user: str
    key: Callable[[str], ConversationKey]


def build_server(knowledge: Callable[[], Knowledge | None], asker: Callable[[Any], Asker], *,
                 version: str = "") -> Server[Any]:
    """The MCP server over `knowledge` (None while it is not built yet: the call is refused as
    unavailable; it is called on a worker thread at each tool call, never for `initialize` or
    `tools/list`, so it may build groundbot on the first call). `asker` gets the transport's request (a Starlette Request over HTTP, None over
    stdio) and returns who calls."""

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=TOOLS)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        contract = CONTRACTS.get(params.name)
        if contract is None:  # a protocol error, as the specification has it for an unknown tool
            shown = params.name if len(params.name) <= 64 else params.name[:64] + "…"
            raise MCPError(types.INVALID_PARAMS, f"Unknown tool {shown!r}; groundbot's tools are ask and search")
        caller = asker(ctx.request)
        try:  # checked against the tool's contract before anything is loaded or asked
            args: AskArgs | SearchArgs = contract.parse(params.arguments or {})
        except BadArguments as exc:
            log.info("mcp %s refused: bad arguments", params.name, extra={"tool": params.name, "who": caller.user,
                                                                         "reason": INPUT_REJECTED})
            return bad_arguments(str(exc))
        # an ask once begun is a turn, answered and recorded even when the client goes away (a closed
        # stdin, a dropped connection): its work is shielded from the call's cancellation
        try:
            with anyio.CancelScope(shield=isinstance(args, AskArgs)):
                # over stdio the first call loads the models and opens the index: off the event loop
                backend = await anyio.to_thread.run_sync(knowledge)
                if backend is None:
                    raise MCPError(types.INTERNAL_ERROR, "groundbot is still starting; try again in a few seconds")
                if isinstance(args, AskArgs):
                    result = await _ask(backend, caller, args)
                else:
                    result = await _search(backend, caller, args)
            return result
        except MCPError:
            raise
        except Exception as exc:  # its text may name paths or tables: logged here, named by type there
            log.exception("mcp %s failed", params.name)
            raise MCPError(types.INTERNAL_ERROR, f"groundbot could not complete the call ({type(exc).__name__})") from exc

    server: Server[Any] = Server("groundbot", version=version, title="groundbot", instructions=INSTRUCTIONS,
                                 on_list_tools=list_tools, on_call_tool=call_tool,
                                 get_tool_input_schema=INPUTS.get)
    server.middleware.append(ExplainNotInitialized())
    return server


async def _ask(backend: Knowledge, caller: Asker, args: AskArgs) -> types.CallToolResult:
    """One turn, in the caller's scope and conversation (a new one when none is given)."""
    conversation = args.conversation or f"mcp-{uuid.uuid4().hex[:12]}"
    msg = Incoming(caller.key(conversation), caller.user, args.question, scope=caller.scope)
    log.info("mcp ask", extra={"tool": ASK, "who": caller.user, "conversation": msg.key.as_str()})
    decision = await anyio.to_thread.run_sync(backend.ask, msg)
    return ask_result(decision, conversation)


async def _search(backend: Knowledge, caller: Asker, args: SearchArgs) -> types.CallToolResult:
    """The passages of the caller's scope; nothing of the index is read for a caller no scope serves."""
    if caller.scope == NOT_SET_UP:
        return refused_call(CHAT_NOT_SET_UP, explain(CHAT_NOT_SET_UP, language_of(args.query)))
    hits, rejection = await anyio.to_thread.run_sync(partial(backend.passages, args.query, args.k, caller.scope))
    if rejection:
        return refused_call(INPUT_REJECTED, rejection)
    log.info("mcp search: %d passages", len(hits), extra={"tool": SEARCH, "who": caller.user,
                                                          "scope": caller.scope or "", "k": args.k})
    return search_result(args.query, caller.scope, hits)


async def serve_stdio(server: Server[Any]) -> None:
    """Serve `server` over this process's stdin and stdout until the client closes them (the SDK
    points fd 1 at stderr meanwhile, so nothing else printed can corrupt the protocol). A line the
    SDK cannot read (not JSON, a batch) is answered with a JSON-RPC error (adapters/mcp/protocol.py)."""
    from mcp.server.stdio import stdio_server
    from mcp.shared.message import SessionMessage

    async with stdio_server() as (read_stream, write_stream):
        forward, checked = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        async with anyio.create_task_group() as tg:
            tg.start_soon(answer_unreadable, read_stream, write_stream, forward)
            async with checked:
                await server.run(checked, write_stream, server.create_initialization_options())
            tg.cancel_scope.cancel()
