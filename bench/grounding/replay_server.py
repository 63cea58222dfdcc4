"""A local OpenAI-compatible chat-completions server that replays canned answers.

It stands in for an LLM during benchmarks: POST /v1/chat/completions looks up the
question (the last "Question: ..." line of the last user message, as
`bot/openai_generator.build_messages` writes it) in a table of answers and returns
the answer of the current `mode` as a proper `chat.completion`, with `logprobs: null`.
An unknown question (or a mode the question has no answer for) gets `NOT_IN_CONTEXT`.

An answer may carry citation placeholders: `{cite}` after a sentence becomes the [Cn] of the
prompt's numbered context that shares the most words with that sentence (ties: lowest n), and
`{cite:prev}` repeats the citation placed before it, and `{cite=TAG}` cites the context whose
text comes from the source registered as TAG (`sources`), as a real LLM cites the page it read;
when retrieval did not put that source in the prompt it falls back to `{cite}`. The numbers
depend on what retrieval put in the prompt, so they are resolved per request; answers without
placeholders are sent as stored.
"""

from __future__ import annotations

import json
import re
import threading
import unicodedata
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from core.text.citations import PATTERN, cited, marker

NOT_IN_CONTEXT = "NOT_IN_CONTEXT"
CITE = "{cite}"  # cite the sentence before it with its best-overlapping context
CITE_PREV = "{cite:prev}"  # cite the sentence before it like the sentence before that
_PLACEHOLDER = re.compile(r"\{cite(?::prev|=[^{}\s]+)?\}")
_CONTEXT_HEAD = re.compile(rf"^{PATTERN}[^\n]*\n", re.MULTILINE)
_WORD = re.compile(r"\w+")
# function words do not make a context the source of a sentence
_FUNCTION_WORDS = frozenset({
    "a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "has", "have", "he", "her", "his", "in", "is",
    "it", "its", "of", "on", "or", "she", "that", "the", "their", "them", "they", "this", "to", "was", "were",
    "which", "who", "with"})


def question_key(text: str) -> str:
    """Lookup key of a question: NFC, whitespace collapsed (what the pipeline's input cleaning keeps)."""
    return " ".join(unicodedata.normalize("NFC", text).split())


def user_content(messages: list[dict[str, Any]]) -> str:
    """Text of the last user message ('' if none)."""
    users = [m for m in messages if m.get("role") == "user"]
    if not users:
        return ""
    content = users[-1].get("content") or ""
    if isinstance(content, list):  # content parts
        content = "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content)


def question_from_messages(messages: list[dict[str, Any]]) -> str:
    """The question after the last 'Question:' of the last user message ('' if none)."""
    content = user_content(messages)
    if not content:
        return ""
    content = "\n" + content
    start = content.rfind("\nQuestion:") + 1  # a line that starts with "Question:"
    if start == 0:
        return ""
    rest = content[start + len("Question:"):]
    end = rest.find("\n\nAnswer")  # build_messages ends with "\n\nAnswer with citations:"
    return (rest[:end] if end >= 0 else rest.split("\n", 1)[0]).strip()


def parse_contexts(content: str) -> dict[int, str]:
    """n -> text of the numbered contexts `[Cn] title > heading\\ntext` of a prompt
    (bot/openai_generator.build_context), up to the 'Question:' line."""
    end = content.rfind("\n\nQuestion:")
    body = content if end < 0 else content[:end]
    heads = list(_CONTEXT_HEAD.finditer(body))
    out: dict[int, str] = {}
    for k, m in enumerate(heads):
        stop = heads[k + 1].start() if k + 1 < len(heads) else len(body)
        out.setdefault(cited(m.group(0))[0], body[m.end():stop].strip())
    return out


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _FUNCTION_WORDS}


def best_context(sentence: str, contexts: Mapping[int, str]) -> int:
    """The context number sharing the most words with `sentence` (ties and no context: lowest n, or 1)."""
    words = _words(sentence)
    best, score = 0, -1
    for n in sorted(contexts):
        shared = len(words & _words(contexts[n]))
        if shared > score:
            best, score = n, shared
    return best or 1


def from_source(context: str, source: str, share: float = 0.9) -> bool:
    """Whether a context's text is (a chunk of) `source`: most of its words are the source's."""
    words = _WORD.findall(context.lower())
    have = set(_WORD.findall(source.lower()))
    return bool(words) and sum(w in have for w in words) / len(words) >= share


def cite_source(sentence: str, tag: str, contexts: Mapping[int, str], sources: Mapping[str, str]) -> int | None:
    """The context number of source `tag` that shares most words with `sentence` (None when
    the source is unknown or in no context)."""
    source = sources.get(tag)
    if source is None:
        return None
    mine = {n: c for n, c in contexts.items() if from_source(c, source)}
    return best_context(sentence, mine) if mine else None


def resolve_citations(text: str, contexts: Mapping[int, str], sources: Mapping[str, str] | None = None) -> str:
    """`text` with each `{cite}` replaced by the [Cn] of its sentence (the text since the
    previous placeholder), each `{cite:prev}` by the citation placed before it and each
    `{cite=TAG}` by the context of source TAG (else as `{cite}`)."""
    out: list[str] = []
    start, last, said = 0, 0, ""
    for m in _PLACEHOLDER.finditer(text):
        sentence = text[start:m.start()]
        said = sentence if _WORD.search(sentence) else said  # "[1] [3]": both cite the same sentence
        token = m.group(0)
        n: int | None = None
        if token == CITE_PREV and last:
            n = last
        elif token.startswith("{cite="):
            n = cite_source(said, token[6:-1], contexts, sources or {})
        if n is None:
            n = best_context(said, contexts)
        out += [sentence, marker(n)]
        start, last = m.end(), n
    return "".join(out) + text[start:]


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
        self.last = ""  # the text of the last completion served
        self.sources: dict[str, str] = {}  # TAG -> source text, for `{cite=TAG}`
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
        return f"http://{host.decode() if isinstance(host, bytes) else host}:{port}/v1"

    # -- serving ------------------------------------------------------------------
    def lookup(self, messages: list[dict[str, Any]]) -> str:
        """The answer for these messages in the current mode, counting requests and misses."""
        q = question_key(question_from_messages(messages))
        with self._lock:
            self.requests += 1
            text = self.answers.get(q, {}).get(self.mode)
            if text is None:
                self.misses += 1
        if text is None:
            text = NOT_IN_CONTEXT
        elif _PLACEHOLDER.search(text):
            text = resolve_citations(text, parse_contexts(user_content(messages)), self.sources)
        with self._lock:
            self.last = text
        return text

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
