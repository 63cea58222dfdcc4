"""groundbot's MCP tools as the official MCP Inspector's command line sees them (tests/inspector.py),
over streamable HTTP at a real `groundbot serve`'s /mcp and over stdio with `groundbot mcp`, on the
two teams' knowledge base: `tools/list` in its strict mode (schemas portable across model
providers), an answered `ask`, a refused `ask`, `search`, a bad argument and, over HTTP, a wrong
token. The Inspector checks each result against the tool's output schema; every result and error
reads as groundbot wrote it, and none names a path of the server's file system. Over stdio the
tools are listed before any model is loaded."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.inspector import AUTH_REQUIRED, TOOL_ERROR, Inspector, Run, inspector
from tests.scenario.scoped_kb import ENG_QUESTION, HR_QUESTION, HR_WORDS
from tests.scenario.test_mcp import ENG_MARKS, HR, Served, ingested, leaks, new_client, served

__all__ = ["inspector", "served"]  # fixtures, reused
pytestmark = pytest.mark.processes  # starts groundbot serve, groundbot mcp and Node

ROOT = Path(__file__).resolve().parents[2]
# an editor's client gives up after about 15 s; no model loads before the list (asserted below), so on an
# idle machine it takes 1-2 s: the bound is the client's, not a speed target, so a loaded CI machine passes
STDIO_LIST_S = 15.0


def no_server_path(run: Run, root: Path) -> None:
    assert str(root) not in run.stdout and "/tmp/" not in run.stdout, run.stdout[:2000]


def answered(run: Run, root: Path) -> dict:
    """An answered `ask` as the Inspector printed it: exit 0, the structured content it checked
    against the output schema, the same as JSON text, the source by its path in the knowledge base."""
    assert run.code == 0, (run.code, run.stdout[-2000:], run.stderr[-2000:])
    result = run.result
    content = result["structuredContent"]
    assert result["isError"] is False and content["answered"] is True and HR_WORDS in content["answer"]
    assert content["citations"][0]["source"] == "kb/hr/leave.md" and content["scope"] == "hr"
    assert json.loads(run.texts()[-1]) == content and "Leave policy" in run.texts()[0]
    no_server_path(run, root)
    return dict(content)


def refused(run: Run, root: Path) -> None:
    assert run.code == 0, (run.code, run.stdout[-2000:], run.stderr[-2000:])
    content = run.result["structuredContent"]
    assert content["answered"] is False and content["reason"] and content["explanation"] and content["scope"] == "hr"
    assert f"[{content['reason']}]" in run.texts()[0] and not leaks(run.stdout, ENG_MARKS)
    no_server_path(run, root)


def searched(run: Run, root: Path) -> None:
    assert run.code == 0, (run.code, run.stdout[-2000:], run.stderr[-2000:])
    passages = run.result["structuredContent"]["passages"]
    assert passages and HR_WORDS in passages[0]["text"] and passages[0]["source"] == "kb/hr/leave.md"
    assert all(not p["source"].startswith("/") for p in passages) and not leaks(run.stdout, ENG_MARKS)
    no_server_path(run, root)


def bad_argument(run: Run, says: str) -> None:
    """A tool error: the Inspector exits with its code for a result with isError (5), showing
    groundbot's explanation; no structured content that would break the output schema."""
    assert run.code == TOOL_ERROR, (run.code, run.stdout[-2000:], run.stderr[-2000:])
    result = run.result
    assert result["isError"] is True and "structuredContent" not in result
    assert run.texts()[0].startswith("Refused (INPUT_REJECTED): ") and says in run.texts()[0], run.texts()
    assert "must have required property" not in run.stdout + run.stderr


def listed(run: Run) -> None:
    assert run.code == 0, (run.code, run.stdout[-2000:], run.stderr[-2000:])
    tools = {t["name"]: t for t in run.result["tools"]}
    assert set(tools) == {"ask", "search"} and all(t["outputSchema"] for t in tools.values())
    # --strict reports every portability finding on stderr; there is none
    assert "Warning: tool" not in run.stderr and "Error: tool" not in run.stderr and "portab" not in run.stderr, run.stderr


# -- over HTTP -----------------------------------------------------------------------------
@pytest.fixture
def over_http(inspector: Inspector, served: Served) -> Iterator[tuple[Inspector, list[str]]]:
    """The Inspector's arguments for /mcp with HR's token (told apart by the address a proxy sets)."""
    yield inspector, ["--server-url", served.url + "/mcp", "--stored-auth-only", "--header",
                      f"Authorization: Bearer {HR}", f"X-Forwarded-For: {new_client()}"]


def test_the_inspector_lists_asks_and_searches_over_http(over_http: tuple[Inspector, list[str]],
                                                         served: Served) -> None:
    run, target = over_http
    root = served.db.parent
    before = served.turns()
    listed(run("--method", "tools/list", "--strict", *target))
    first = answered(run("--method", "tools/call", "--tool-name", "ask",
                         "--tool-args-json", json.dumps({"question": HR_QUESTION}), *target), root)
    refused(run("--method", "tools/call", "--tool-name", "ask",
                "--tool-args-json", json.dumps({"question": ENG_QUESTION}), *target), root)
    searched(run("--method", "tools/call", "--tool-name", "search",
                 "--tool-args-json", json.dumps({"query": HR_QUESTION, "k": 3}), *target), root)
    bad_argument(run("--method", "tools/call", "--tool-name", "search",
                     "--tool-args-json", json.dumps({"query": HR_QUESTION, "k": 50}), *target),
                 "'k' must be a whole number from 1 to 20; got 50")
    bad_argument(run("--method", "tools/call", "--tool-name", "ask",
                     "--tool-args-json", json.dumps({"question": HR_QUESTION, "scope": "eng"}), *target),
                 "ask takes no argument 'scope'; its arguments are question, conversation")
    assert served.turns() == before + 2  # the two asks, no more
    assert served.rows("SELECT platform FROM turn WHERE uid = ?", first["turn"]) == [("mcp",)]


def test_the_inspector_with_a_wrong_token_is_told_so(inspector: Inspector, served: Served) -> None:
    run = inspector("--method", "tools/list", "--server-url", served.url + "/mcp", "--stored-auth-only",
                    "--header", "Authorization: Bearer not-a-token", f"X-Forwarded-For: {new_client()}")
    assert run.code == AUTH_REQUIRED, (run.code, run.stdout, run.stderr)
    error = run.json["error"]
    assert error["code"] == "auth_required" and "missing or wrong bearer token" in error["message"], error


# -- over stdio ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def stdio_config(tmp_path_factory: pytest.TempPathFactory, embedder: object) -> Path:
    return ingested(tmp_path_factory.mktemp("mcp-inspector-stdio"), embedder)


def groundbot_mcp(cfg: Path) -> list[str]:
    return ["--", sys.executable, "-m", "bot.cli.main", "--config", str(cfg), "mcp", "--scope", "hr"]


def test_the_inspector_lists_the_tools_over_stdio_before_any_model_is_loaded(inspector: Inspector,
                                                                             stdio_config: Path) -> None:
    runs = [inspector("--method", "tools/list", "--strict", "--cwd", str(ROOT), *groundbot_mcp(stdio_config))
            for _ in range(2)]
    for run in runs:
        listed(run)
        assert "Loading SentenceTransformer" not in run.stderr  # nothing but the tool list was asked for
    fastest = min(r.seconds for r in runs)
    print(f"stdio tools/list through the Inspector: {', '.join(f'{r.seconds:.2f} s' for r in runs)}")
    assert fastest <= STDIO_LIST_S, [r.seconds for r in runs]


def test_the_inspector_asks_and_searches_over_stdio(inspector: Inspector, stdio_config: Path) -> None:
    root, target = stdio_config.parent, ["--cwd", str(ROOT), *groundbot_mcp(stdio_config)]

    def call(tool: str, arguments: dict) -> Run:
        return inspector("--method", "tools/call", "--tool-name", tool, "--tool-args-json", json.dumps(arguments),
                         *target)

    first = answered(call("ask", {"question": HR_QUESTION}), root)
    refused(call("ask", {"question": ENG_QUESTION}), root)
    searched(call("search", {"query": HR_QUESTION, "k": 3}), root)
    bad_argument(call("search", {"query": HR_QUESTION, "k": 50}), "'k' must be a whole number from 1 to 20; got 50")
    bad_argument(call("ask", {"question": 42}), "'question' is required and must be a string, not a number")
    import sqlite3

    with sqlite3.connect(root / "records.db") as conn:
        turns = conn.execute("SELECT uid, platform, refused FROM turn ORDER BY id").fetchall()
    assert [t[1:] for t in turns] == [("mcp", 0), ("mcp", 1)] and turns[0][0] == first["turn"]
