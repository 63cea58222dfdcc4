"""A real HTTP server on 127.0.0.1 over a folder of web pages (a copy of a documentation site),
for the sync benchmark and the synced-source tests: strong ETags from the content (so a page
changed within the same second is not taken for unchanged), 404 for a deleted page, answers a
test sets for a path (`extra`: redirect loops, huge or binary pages), and a switch that breaks
it: every request after the next `fail_after` answers 500, and `hold` keeps pages waiting."""

from __future__ import annotations

import hashlib
import mimetypes
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit


class SiteServer:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.requests: list[tuple[str, int]] = []  # (path, status)
        self.fail_after: int | None = None  # answer 500 once this many more requests were served
        self.extra: dict[str, tuple[int, dict[str, str], bytes]] = {}  # path -> (status, headers, body)
        self.arrived: list[str] = []  # every request's path as it arrives (before `hold`)
        self.hold: threading.Event | None = None  # while set to an unset event, pages wait (robots.txt does not)
        self._lock = threading.Lock()
        site = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                site.arrived.append(urlsplit(self.path).path)
                if site.hold is not None and not self.path.startswith("/robots.txt"):
                    site.hold.wait(120)
                status, headers, body = site.answer(self.path, self.headers.get("If-None-Match", ""))
                try:
                    self.send_response(status)
                    for k, v in headers.items():
                        self.send_header(k, v)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):  # the client died waiting (a killed worker)
                    pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/"

    def answer(self, raw_path: str, if_none_match: str) -> tuple[int, dict[str, str], bytes]:
        path = unquote(urlsplit(raw_path).path)
        with self._lock:
            if self.fail_after is not None:
                if self.fail_after <= 0:
                    self.requests.append((path, 500))
                    return 500, {"Content-Type": "text/plain"}, b"broken"
                self.fail_after -= 1
            if path in self.extra:
                status, headers, body = self.extra[path]
                self.requests.append((path, status))
                return status, headers, body
        file = (self.root / path.lstrip("/")).resolve()
        if file.is_dir():
            file = file / "index.html"
        if not file.is_relative_to(self.root.resolve()) or not file.is_file():
            self.requests.append((path, 404))
            return 404, {"Content-Type": "text/html"}, b"<html><body>not found</body></html>"
        body = file.read_bytes()
        etag = '"' + hashlib.sha256(body).hexdigest()[:20] + '"'
        if if_none_match == etag:
            self.requests.append((path, 304))
            return 304, {"ETag": etag}, b""
        kind = mimetypes.guess_type(file.name)[0] or "application/octet-stream"
        if kind.startswith("text/"):
            kind += "; charset=utf-8"
        self.requests.append((path, 200))
        return 200, {"ETag": etag, "Content-Type": kind}, body

    def __enter__(self) -> SiteServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
