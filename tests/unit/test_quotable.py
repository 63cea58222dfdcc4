"""What may be quoted as an answer, on lines from real docs sites and real questions."""

from __future__ import annotations

import pytest

from core.generate.quotable import is_code_fragment, is_error_line, quotable, said_back


@pytest.mark.parametrize("line", [
    "Traceback (most recent call last):",
    'File "/app/main.py", line 12, in <module>',
    "httpx.ConnectError: [Errno 111] Connection refused",
    "TypeError: 'NoneType' object is not callable",
    "Error [ERR_REQUIRE_ESM]: Must use import to load ES Module: /app/node_modules/x/index.js",  # ts-node
    "error TS2307: Cannot find module './foo' or its corresponding type declarations.",
    "at Module._compile (node:internal/modules/cjs/loader:1105:14)",
    "npm ERR! code ELIFECYCLE",
    "INFO - Cleaning site directory",  # MkDocs' build log
    "WARNING - Doc file 'foo/example.md' contains a link '../bar.md#some-heading'.",
    "2024-05-01 10:11:12,345 ERROR worker died",
])
def test_error_stack_and_log_lines(line: str) -> None:
    assert is_error_line(line)


@pytest.mark.parametrize("sentence", [
    "This error is thrown by node when a module is require()d, but node believes it should execute as native ESM.",
    "Errors are logged to the console.",
    "Type errors from the compiler are thrown as a TSError.",
    "Information about the request is available on request.scope.",
])
def test_sentences_about_errors_are_not_error_lines(sentence: str) -> None:
    assert not is_error_line(sentence)


@pytest.mark.parametrize(("sentence", "code"), [
    ('Proxy("http://127.0.0.1:8081"), httpx.', True),
    ("app = Starlette(debug=True, routes=routes)", True),
    ("class MyPluginConfig(base.Config): foo = c.Optional(c.Type(int)) bar = c.Type(str, default='')", True),
    ('url = request.url_for("user_detail", username=...)', True),
    # a code example of Starlette's websockets page, flattened into one line by the page's HTML
    ('async def websocket_endpoint(websocket: WebSocket): subprotocols = websocket.scope["subprotocols"] if not '
     'is_authorized(subprotocols): raise HTTPException(status_code=401, detail="Unauthorized") await '
     'websocket.accept("Authorization") await websocket.send_text("Hello, world!', True),
    ("Use httpx.AsyncClient.", False),
    ("If you are coming from Requests, httpx.Client() is what you can use instead of requests.Session().", False),
    ("default: 'site'", False),  # MkDocs' configuration page: the answer to "what is the default?"
    ("Use the `--port` option (default: 8000).", False),
    ("pip install httpx", False),
])
def test_bare_code_fragments(sentence: str, code: bool) -> None:
    assert is_code_fragment(sentence) is code


def test_a_sentence_said_back_is_one_nearly_verbatim_in_the_question() -> None:
    asked = "I get httpx.ConnectError: [Errno 111] Connection refused when I call the API. How do I set a proxy?"
    assert said_back("httpx.ConnectError: [Errno 111] Connection refused.", asked)
    assert said_back("How do I set a proxy?", asked)
    assert not said_back("Connection refused errors mean the server is not listening.", asked)
    assert not said_back("To set a proxy, pass proxy= to the client.", asked)
    assert not said_back("Proxy.", asked)  # one word: not said back
    assert quotable("To set a proxy, pass proxy= to the client.", asked)
