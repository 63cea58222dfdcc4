"""MCP adapter: groundbot as a Model Context Protocol server, for coding agents and assistants.

Two tools (`tools`): `ask`, one turn of a conversation answered with its citations or refused
with its reason, and `search`, the passages groundbot would read, each a contract of two models
(`contract`) from which its schemas and the check of its arguments follow. `results` renders a
decision or the passages as text and structured content; `server` is the SDK's Server over them,
served over streamable HTTP by `groundbot serve` (bot/server/mcp_route.py) or over stdio by
`groundbot mcp`.
"""

from adapters.mcp.server import PLATFORM, Asker, Knowledge, build_server, installed_version, serve_stdio
from adapters.mcp.tools import DEFAULT_K, MAX_K, TOOLS

__all__ = ["DEFAULT_K", "MAX_K", "PLATFORM", "TOOLS", "Asker", "Knowledge", "build_server", "installed_version",
           "serve_stdio"]
