"""A local OpenAI-compatible chat-completions server on 127.0.0.1 for scenario tests.

Answers are `enqueue()`d; every request body is kept, so tests can prove the LLM was
(or was not) called and what it was shown.
"""

from __future__ import annotations

import json
import math
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from bench.grounding.replay_server import completion_body


class OpenAIStandIn:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.queue: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        standin = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output quiet
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                with standin._lock:
                    standin.requests.append({"path": self.path, "body": body, "at": time.monotonic()})
                    item = standin.queue.pop(0) if standin.queue else {"text": "NOT_IN_CONTEXT"}
                if item.get("delay"):
                    time.sleep(item["delay"])
                status = int(item.get("status", 200))
                payload = standin._completion(body, item) if status == 200 else {"error": {"message": "boom"}}
                data = item["raw"] if item.get("raw") is not None else json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):  # the client timed out first
                    pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def enqueue(self, text: str = "", *, prob: float | None = None, status: int = 200, delay: float = 0.0,
                raw: bytes | None = None, finish_reason: str = "stop") -> None:
        """Queue the next response: `raw` sends those bytes as the body instead of a completion."""
        self.queue.append({"text": text, "prob": prob, "status": status, "delay": delay, "raw": raw,
                           "finish_reason": finish_reason})

    def _completion(self, body: dict[str, Any], item: dict[str, Any]) -> dict[str, Any]:
        text = item["text"]
        logprobs = None
        if item.get("prob") is not None and body.get("logprobs"):
            lp = math.log(item["prob"])
            logprobs = {"content": [{"token": t, "logprob": lp, "bytes": None, "top_logprobs": []} for t in text.split()]}
        out = completion_body(f"chatcmpl-{len(self.requests)}", body.get("model", "standin"), text, logprobs)
        out["choices"][0]["finish_reason"] = item.get("finish_reason", "stop")
        return out

    def __enter__(self) -> OpenAIStandIn:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
