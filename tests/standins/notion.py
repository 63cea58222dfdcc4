"""A Notion API stand-in on 127.0.0.1 for the wiki-source tests: the calls a sync makes at API
version 2025-09-03 (retrieve a database and its data sources, query a data source with
`start_cursor` / `has_more`, retrieve a page, list a block's children, paginated), answered in
the documented JSON shapes. It checks the Bearer token (401 `unauthorized` otherwise) and that a
Notion-Version header is sent (400 `missing_version` otherwise).

A test adds pages (to a database or standalone), edits them (`last_edited_time` moves on a
minute, as Notion's is rounded to the minute), trashes them, sets `broken` (every call answers
500), and reads `requests` to see which calls were made.
"""

from __future__ import annotations

import json
import threading
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

Block = dict[str, Any]


def _rich(text: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": {"content": text, "link": None}, "plain_text": text, "href": None,
             "annotations": {"bold": False, "italic": False, "strikethrough": False, "underline": False,
                             "code": False, "color": "default"}}]


def block(kind: str, text: str = "", children: list[Block] | None = None, **extra: Any) -> Block:
    """A block object as the API returns it; `children` are served under its id."""
    body: dict[str, Any] = {"rich_text": _rich(text), "color": "default", **extra}
    return {"object": "block", "id": str(uuid.uuid4()), "type": kind, kind: body,
            "has_children": bool(children), "in_trash": False, "_children": children or []}


@dataclass
class NotionPage:
    page_id: str
    title: str
    blocks: list[Block]
    database: str = ""
    edited: datetime = field(default_factory=lambda: datetime(2024, 5, 1, 10, 0, tzinfo=UTC))
    in_trash: bool = False


class NotionStandIn:
    def __init__(self, token: str, *, max_page_size: int = 100) -> None:
        self.token = token
        self.max_page_size = max_page_size  # below 100 makes a handful of blocks page through
        self.pages: dict[str, NotionPage] = {}
        self.databases: dict[str, str] = {}  # database id -> its one data source's id
        self.requests: list[tuple[str, str, int]] = []  # (method, path with query, status)
        self.broken = False
        self._lock = threading.Lock()
        standin = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _reply(self, method: str) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                payload = json.loads(self.rfile.read(length) or b"{}") if length else {}
                status, body = standin.answer(method, self.path, dict(self.headers.items()), payload)
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                self._reply("GET")

            def do_POST(self) -> None:
                self._reply("POST")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base(self) -> str:
        """The API's base URL (the client adds /v1)."""
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    # -- what a test changes -------------------------------------------------------------
    def add_database(self) -> str:
        database_id = str(uuid.uuid4())
        self.databases[database_id] = str(uuid.uuid4())
        return database_id

    def add(self, title: str, blocks: list[Block], database: str = "") -> str:
        page_id = str(uuid.uuid4())
        with self._lock:
            self.pages[page_id] = NotionPage(page_id, title, blocks, database)
        return page_id

    def edit(self, page_id: str, blocks: list[Block]) -> None:
        with self._lock:
            page = self.pages[page_id]
            page.blocks = blocks
            page.edited += timedelta(minutes=1)

    def trash(self, page_id: str) -> None:
        with self._lock:
            self.pages[page_id].in_trash = True
            self.pages[page_id].edited += timedelta(minutes=1)

    def url(self, page_id: str) -> str:
        page = self.pages[page_id]
        return f"https://www.notion.so/{page.title.replace(' ', '-')}-{page_id.replace('-', '')}"

    def block_reads(self) -> list[str]:
        return [p for _, p, _ in self.requests if p.startswith("/v1/blocks/")]

    # -- the API -------------------------------------------------------------------------
    def answer(self, method: str, raw: str, headers: dict[str, str],
               payload: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        parts = urlsplit(raw)
        query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        lower = {k.lower(): v for k, v in headers.items()}
        with self._lock:
            if lower.get("authorization") != f"Bearer {self.token}":
                status, body = 401, _error(401, "unauthorized", "API token is invalid.")
            elif not lower.get("notion-version"):
                status, body = 400, _error(400, "missing_version", "Notion-Version header failed validation.")
            elif self.broken:
                status, body = 500, _error(500, "internal_server_error", "Unexpected error occurred.")
            else:
                status, body = self._route(method, parts.path.strip("/").split("/"), query, payload)
            self.requests.append((method, raw, status))
        return status, body

    def _route(self, method: str, path: list[str], query: dict[str, str],
               payload: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if path[:1] != ["v1"] or len(path) < 3:
            return 400, _error(400, "invalid_request_url", "Invalid request URL.")
        kind, key = path[1], path[2]
        if method == "GET" and kind == "databases" and len(path) == 3 and key in self.databases:
            return 200, {"object": "database", "id": key, "title": _rich("Handbook"), "is_inline": False,
                         "in_trash": False, "data_sources": [{"id": self.databases[key], "name": "Handbook"}],
                         "url": f"https://www.notion.so/{key.replace('-', '')}"}
        if method == "POST" and kind == "data_sources" and path[3:] == ["query"]:
            database = next((d for d, s in self.databases.items() if s == key), None)
            if database is None:
                return 404, _error(404, "object_not_found", f"Could not find data_source with ID: {key}.")
            rows = [self._page(p) for p in self.pages.values() if p.database == database and not p.in_trash]
            return 200, self._list(rows, payload.get("start_cursor"), int(payload.get("page_size") or 100),
                                   "page_or_data_source")
        if method == "GET" and kind == "pages" and len(path) == 3 and key in self.pages:
            return 200, self._page(self.pages[key])
        if method == "GET" and kind == "blocks" and path[3:] == ["children"]:
            children = self._children(key)
            if children is None:
                return 404, _error(404, "object_not_found", f"Could not find block with ID: {key}.")
            shown = [{k: v for k, v in b.items() if k != "_children"} for b in children]
            return 200, self._list(shown, query.get("start_cursor"), int(query.get("page_size") or 100), "block")
        return 404, _error(404, "object_not_found", f"Could not find {kind} with ID: {key}.")

    def _children(self, block_id: str) -> list[Block] | None:
        page = self.pages.get(block_id)
        if page is not None:
            return None if page.in_trash else page.blocks
        todo = [b for p in self.pages.values() if not p.in_trash for b in p.blocks]
        while todo:
            b = todo.pop()
            if b["id"] == block_id:
                return list(b["_children"])
            todo.extend(b["_children"])
        return None

    def _list(self, items: list[dict[str, Any]], cursor: Any, size: int, kind: str) -> dict[str, Any]:
        start = int(cursor) if cursor else 0
        size = min(size, self.max_page_size)
        window = items[start:start + size]
        more = start + size < len(items)
        return {"object": "list", "results": window, "next_cursor": str(start + size) if more else None,
                "has_more": more, "type": kind, kind: {}}

    def _page(self, page: NotionPage) -> dict[str, Any]:
        parent = ({"type": "data_source_id", "data_source_id": self.databases[page.database],
                   "database_id": page.database} if page.database else {"type": "workspace", "workspace": True})
        return {"object": "page", "id": page.page_id, "created_time": "2024-04-01T09:00:00.000Z",
                "last_edited_time": page.edited.strftime("%Y-%m-%dT%H:%M:00.000Z"),
                "created_by": {"object": "user", "id": "u1"}, "last_edited_by": {"object": "user", "id": "u1"},
                "cover": None, "icon": None, "parent": parent, "archived": page.in_trash, "in_trash": page.in_trash,
                "properties": {"Name": {"id": "title", "type": "title", "title": _rich(page.title)}},
                "url": self.url(page.page_id), "public_url": None}

    def __enter__(self) -> NotionStandIn:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def _error(status: int, code: str, message: str) -> dict[str, Any]:
    return {"object": "error", "status": status, "code": code, "message": message,
            "request_id": str(uuid.uuid4())}
