"""A local OpenAI-compatible chat-completions server that replays canned answers.

It stands in for an LLM during benchmarks: POST /v1/chat/completions looks up the
question (the last "Question: ..." line of the last user message, as
`bot/openai_generator.build_messages` writes it) in a table of answers and returns
the answer of the current `mode` as a proper `chat.completion`, with `logprobs: null`.
An unknown question (or a mode the question has no answer for) gets `NOT_IN_CONTEXT`.
"""

from __future__ import annotations

import json
import threading
import unicodedata
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

NOT_IN_CONTEXT = "NOT_IN_CONTEXT"


def question_key(text: str) -> str:
    """Lookup key of a question: NFC, whitespace collapsed (what the pipeline's input cleaning keeps)."""
    return " ".join(unicodedata.normalize("NFC", text).split())


def question_from_messages(messages: list[dict[str, Any]]) -> str:
    """The question after the last 'Question:' of the last user message ('' if none)."""
    users = [m for m in messages if m.get("role") == "user"]
    if not users:
        return ""
    content = users[-1].get("content") or ""
    if isinstance(content, list):  # content parts
        content = "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    content = "\n" + str(content)
    start = content.rfind("\nQuestion:") + 1  # a line that starts with "Question:"
    if start == 0:
        return ""
    rest = content[start + len("Question:"):]
    end = rest.find("\n\nAnswer")  # build_messages ends with "\n\nAnswer with citations:"
    return (rest[:end] if end >= 0 else rest.split("\n", 1)[0]).strip()


def completion_body(completion_id: str, model: str, text: str, logprobs: dict[str, Any] | None = None) -> dict[str, Any]:
    """An OpenAI chat.completion response carrying `text` (the shape the openai client parses)."""
    words = len(text.split())
    return {
        "id": completion_id,
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                     "finish_reason": "stop", "logprobs": logprobs}],
        "usage": {"prompt_tokens": 0, "completion_tokens": words, "total_tokens": words},
    }


class ReplayServer:
    """Threaded local server; use as a context manager. `answers[question][mode] -> text`."""

    def __init__(self, answers: Mapping[str, Mapping[str, str]] | None = None, mode: str = "right",
                 host: str = "127.0.0.1", port: int = 0) -> None:
        self.answers: dict[str, dict[str, str]] = {}
        self.mode = mode
        self.requests = 0
        self.misses = 0
        self._lock = threading.Lock()
        for q, by_mode in (answers or {}).items():
            self.add(q, **by_mode)
        self.server = ThreadingHTTPServer((host, port), self._handler())
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, name="replay-server", daemon=True)

    # -- configuration ----------------------------------------------------------
    def add(self, question: str, **by_mode: str) -> None:
        """Register the answers of one question, e.g. `add(q, right="...", hallucinated="...")`."""
        self.answers.setdefault(question_key(question), {}).update(by_mode)

    def set_mode(self, mode: str) -> None:
        with self._lock:
            self.mode = mode

    @property
    def base_url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}/v1"

    # -- serving ------------------------------------------------------------------
    def lookup(self, messages: list[dict[str, Any]]) -> str:
        """The answer for these messages in the current mode, counting requests and misses."""
        q = question_key(question_from_messages(messages))
        with self._lock:
            self.requests += 1
            text = self.answers.get(q, {}).get(self.mode)
            if text is None:
                self.misses += 1
        return NOT_IN_CONTEXT if text is None else text

    def completion(self, body: dict[str, Any]) -> dict[str, Any]:
        text = self.lookup(body.get("messages") or [])
        with self._lock:
            n = self.requests
        return completion_body(f"chatcmpl-replay-{n}", body.get("model", "replay"), text)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        replay = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive: the openai client reuses connections

            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length", 0) or 0))
                if self.path.rstrip("/") != "/v1/chat/completions":
                    self._send(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
                    return
                try:
                    body = json.loads(raw or b"{}")
                except json.JSONDecodeError:
                    self._send(400, {"error": {"message": "invalid JSON", "type": "invalid_request_error"}})
                    return
                self._send(200, replay.completion(body))

        return Handler

    def __enter__(self) -> ReplayServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
