"""A Confluence stand-in on 127.0.0.1 for the wiki-source tests: the content REST API's three
calls a sync makes (a space, a space's pages with `start`/`limit` paging and `_links.next`, one
page with `expand=body.storage,version`), answered in the documented JSON shapes under a
context path (`/wiki`, as Confluence Cloud serves it). It checks the Authorization header (a
Bearer token, or basic auth with an e-mail when `user` is set) and answers 401 otherwise.

A test adds, edits (the version number goes up) and deletes pages, sets `broken` (every call
answers 500), and reads `requests` to see which calls were made.
"""

from __future__ import annotations

import base64
import json
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, quote_plus, urlencode, urlsplit


@dataclass
class WikiPage:
    page_id: str
    space: str
    title: str
    body: str  # storage format (XHTML)
    version: int = 1


class ConfluenceStandIn:
    def __init__(self, token: str, *, user: str = "", spaces: tuple[str, ...] = ("DOCS",), context: str = "/wiki",
                 max_limit: int = 2) -> None:
        self.token = token
        self.user = user
        self.spaces = set(spaces)
        self.context = context
        self.max_limit = max_limit  # the server caps `limit`, so a handful of pages pages through
        self.pages: dict[str, WikiPage] = {}
        self.requests: list[tuple[str, int]] = []  # (path with query, status)
        self.broken = False
        self._lock = threading.Lock()
        self._next_id = 1001
        standin = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                status, body = standin.answer(self.path, self.headers.get("Authorization", ""))
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json;charset=UTF-8")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base(self) -> str:
        """The URL a source's `url` names (the context path included)."""
        return f"http://127.0.0.1:{self.server.server_address[1]}{self.context}"

    # -- what a test changes -------------------------------------------------------------
    def add(self, title: str, body: str, space: str = "DOCS") -> str:
        with self._lock:
            page_id = str(self._next_id)
            self._next_id += 1
            self.pages[page_id] = WikiPage(page_id, space, title, body)
        return page_id

    def edit(self, page_id: str, body: str) -> None:
        with self._lock:
            page = self.pages[page_id]
            page.body = body
            page.version += 1

    def delete(self, page_id: str) -> None:
        with self._lock:
            del self.pages[page_id]

    def webui(self, page_id: str) -> str:
        page = self.pages[page_id]
        return f"/spaces/{page.space}/pages/{page_id}/{quote_plus(page.title)}"

    def body_reads(self) -> list[str]:
        """The calls that fetched a page's body."""
        return [p for p, _ in self.requests if "body.storage" in p]

    # -- the API -------------------------------------------------------------------------
    def _authorized(self, header: str) -> bool:
        if self.user:
            expected = base64.b64encode(f"{self.user}:{self.token}".encode()).decode()
            return header == f"Basic {expected}"
        return header == f"Bearer {self.token}"

    def answer(self, raw: str, authorization: str) -> tuple[int, dict[str, Any]]:
        parts = urlsplit(raw)
        query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        with self._lock:
            status, body = self._route(parts.path, query, authorization)
            self.requests.append((raw, status))
        return status, body

    def _route(self, path: str, query: dict[str, str], authorization: str) -> tuple[int, dict[str, Any]]:
        if not path.startswith(self.context + "/rest/api/"):
            return 404, _error(404, "Not Found", f"no resource at {path}")
        if not self._authorized(authorization):
            return 401, _error(401, "Unauthorized", "Basic or Bearer authentication is required")
        if self.broken:
            return 500, _error(500, "Internal Server Error", "java.lang.NullPointerException")
        resource = path[len(self.context + "/rest/api/"):].strip("/").split("/")
        expand = set(query.get("expand", "").split(","))
        if resource[0] == "space" and len(resource) == 2:
            if resource[1] not in self.spaces:
                return 404, _error(404, "Not Found", f"No space with key : {resource[1]}")
            key = resource[1]
            return 200, {"id": 98305, "key": key, "name": key.title(), "type": "global",
                         "_links": {"webui": f"/spaces/{key}", "self": f"{self.base}/rest/api/space/{key}"},
                         "_expandable": {"homepage": "", "description": ""}}
        if resource == ["content"]:
            return self._listing(query, expand)
        if resource[0] == "content" and len(resource) == 2:
            page = self.pages.get(resource[1])
            if page is None:
                return 404, _error(404, "Not Found", "No content found with id: " + resource[1])
            return 200, self._content(page, expand)
        return 404, _error(404, "Not Found", f"no resource at {path}")

    def _listing(self, query: dict[str, str], expand: set[str]) -> tuple[int, dict[str, Any]]:
        space = query.get("spaceKey", "")
        start = int(query.get("start", "0"))
        limit = min(int(query.get("limit", "25")), self.max_limit)
        found = sorted((p for p in self.pages.values() if p.space == space and query.get("type", "page") == "page"),
                       key=lambda p: int(p.page_id))
        window = found[start:start + limit]
        links: dict[str, str] = {"base": self.base, "context": self.context,
                                 "self": f"{self.base}/rest/api/content?{urlencode(query)}"}
        if start + limit < len(found):
            links["next"] = "/rest/api/content?" + urlencode({**query, "start": start + limit, "limit": limit})
        return 200, {"results": [self._content(p, expand) for p in window], "start": start, "limit": limit,
                     "size": len(window), "_links": links}

    def _content(self, page: WikiPage, expand: set[str]) -> dict[str, Any]:
        item: dict[str, Any] = {"id": page.page_id, "type": "page", "status": "current", "title": page.title,
                                "_links": {"webui": self.webui(page.page_id), "tinyui": f"/x/{page.page_id}",
                                           "self": f"{self.base}/rest/api/content/{page.page_id}"},
                                "_expandable": {"container": f"/rest/api/space/{page.space}", "ancestors": ""}}
        if "version" in expand:
            item["version"] = {"number": page.version, "when": "2024-05-01T10:00:00.000Z", "minorEdit": False,
                               "by": {"type": "known", "displayName": "Stand-in"}}
        if "body.storage" in expand:
            item["body"] = {"storage": {"value": page.body, "representation": "storage"}}
        return item

    def __enter__(self) -> ConfluenceStandIn:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def _error(status: int, reason: str, message: str) -> dict[str, Any]:
    return {"statusCode": status, "data": {"authorized": status != 401, "valid": True, "errors": []},
            "message": message, "reason": reason}
