"""`groundbot mcp`: the MCP tools `ask` and `search` (adapters/mcp) over stdio, for an agent or an
editor on the same machine that starts groundbot as its MCP server. The index and the database
are the configured ones; the knowledge scope is the command line's, so the one line of MCP
settings an editor needs names it (docs/mcp.md). stdout carries the protocol alone: messages go
to stderr, and the SDK points stdout at stderr while it serves.

`initialize` and `tools/list` are answered at once: the models, the index and the database are
loaded on the first tool call (a first run ingests then), so an editor lists the tools in about a
second, well inside its start-up timeout."""

from __future__ import annotations

import argparse
import sys
import threading
from typing import TYPE_CHECKING, Any

from bot.config import Config

if TYPE_CHECKING:
    from bot.app import App


class LazyApp:
    """groundbot's App, built by the first call that needs it (on the server's worker thread) and
    kept; a build that fails is tried again by the next call."""

    def __init__(self, cfg: Config) -> None:
        self.cfg = cfg
        self.app: App | None = None
        self.lock = threading.Lock()

    def __call__(self) -> App:
        with self.lock:
            if self.app is None:
                from bot.app import ready_app

                self.app = ready_app(self.cfg)  # a first run ingests the configured knowledge base, on stderr
            return self.app

    def close(self) -> None:
        with self.lock:
            if self.app is not None:
                self.app.close()


def _scope(cfg: Config, name: str | None) -> str | None:
    """The scope named, or the one serving "mcp" as a chat (`[[scopes]] chats`, else the default
    scope); None without scopes. ValueError saying what to pass when there is none."""
    from bot.scopes import ScopeError
    from core.messages import NOT_SET_UP, ConversationKey

    scopes = cfg.scope_map()
    if name is not None:
        try:
            return scopes.check(name)
        except ScopeError as exc:
            raise ValueError(str(exc)) from exc
    scope = scopes.resolve(ConversationKey("mcp", ""))
    if scope == NOT_SET_UP:
        raise ValueError(f"knowledge scopes are configured and none serves MCP: name one with --scope NAME "
                         f"(scopes: {', '.join(scopes.names())})")
    return scope


def cmd_mcp(cfg: Config, args: argparse.Namespace) -> int:
    import anyio

    from adapters.mcp import PLATFORM, Asker, build_server, installed_version, serve_stdio
    from core.messages import ConversationKey

    try:
        scope = _scope(cfg, args.scope)
    except ValueError as exc:
        print(f"groundbot mcp: {exc}", file=sys.stderr)
        return 2
    app = LazyApp(cfg)
    # the conversations of this machine's agents, one namespace per scope (as /api/ask keeps them apart)
    asker = Asker(scope, args.user, lambda chat: ConversationKey(PLATFORM, chat, f"stdio:{scope or ''}"))
    server = build_server(app, lambda _request: asker, version=installed_version())
    print(f"groundbot mcp: serving ask and search over stdio ({f'scope {scope}' if scope else 'the whole knowledge base'})",
          file=sys.stderr)
    try:
        anyio.run(serve_stdio, server)
    finally:
        app.close()
    return 0


def register(sub: Any) -> None:
    s = sub.add_parser("mcp", help="serve the MCP tools ask and search over stdio (docs/mcp.md)")
    s.add_argument("--scope", default=None, metavar="NAME",
                   help="answer and search in this knowledge scope ([[scopes]] in config.toml); needed when scopes "
                        "are configured and none serves the chat 'mcp'")
    s.add_argument("--user", default="mcp", help="user id recorded with each turn (default: mcp)")
    s.set_defaults(func=cmd_mcp)
