"""Notion pages and databases as a source, read through notion-client (the maintained Python
client of Notion's API) over the guarded httpx client of sources/wikis.py, at the API version
the client speaks (2025-09-03: a database's pages are queried through its data sources).

Why a page's `last_edited_time` is its version: it is in the page object the listing already
returns, so an unchanged page is kept without its blocks being read (a page's blocks cost one
request per 100, and more for nested ones). Notion rounds that time to the minute: an edit made
within the minute of the last sync is seen at the sync after the next edit (docs/sources.md).
A page moved to the trash, or no longer shared with the integration (404), is gone.
"""

from __future__ import annotations

import logging
from typing import Any

import httpx

from storage.ingestion.sources.base import Collected, Progress, SourceFailed, SourceSpec, to_document
from storage.ingestion.sources.fetch import FetchError
from storage.ingestion.sources.notion_blocks import block_markdown, page_title, table_lines
from storage.ingestion.sources.wikis import ApiTransport, api_client, check_base, scrub
from storage.records.source_state import PageState

log = logging.getLogger(__name__)
MAX_DEPTH = 3  # nested blocks read below a page's top level (toggles, list items, columns)
PAGE_SIZE = 100  # the API's maximum
API_VERSION = "2025-09-03"  # pinned: a client upgrade must not change the shapes read here
LISTED = ("bulleted_list_item", "numbered_list_item", "to_do", "toggle")


class _CallFailed(Exception):
    """One API call failed; `status` is the HTTP status when the API answered one."""

    def __init__(self, message: str, status: int = 0) -> None:
        super().__init__(message)
        self.status = status


class _TooLarge(Exception):
    """A page's Markdown grew past `max_page_bytes`."""


def dashed(page_id: str) -> str:
    """A Notion id as the API writes it (8-4-4-4-12), however it was pasted."""
    raw = page_id.strip().replace("-", "").lower()
    if len(raw) == 32 and all(c in "0123456789abcdef" for c in raw):
        return f"{raw[:8]}-{raw[8:12]}-{raw[12:16]}-{raw[16:20]}-{raw[20:]}"
    return page_id.strip()


class NotionConnector:
    """Reads one `kind = "notion"` source (`url` is the API's, https://api.notion.com)."""

    def __init__(self, spec: SourceSpec, token: str) -> None:
        from notion_client import Client
        from notion_client.client import ClientOptions, RetryOptions

        self.spec = spec
        self.token = token
        self.transport = ApiTransport(spec)
        options = ClientOptions(auth=token, notion_version=API_VERSION, base_url=spec.url.rstrip("/"),
                                timeout_ms=int(spec.timeout_s * 1000),
                                logger=logging.getLogger(f"{__name__}.client"),  # the sync report says what failed
                                log_level=logging.ERROR,
                                retry=RetryOptions(max_retries=2, initial_retry_delay_ms=300, max_retry_delay_ms=5000))
        self.notion = Client(options, client=api_client(self.transport))

    def _call(self, what: str, method: Any, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """One client call; its errors as _CallFailed with a message that holds no token."""
        from notion_client.errors import HTTPResponseError, NotionClientErrorBase, RequestTimeoutError

        try:
            data = method(*args, **kwargs)
        except HTTPResponseError as exc:
            code = getattr(exc.code, "value", exc.code) if getattr(exc, "code", "") else ""
            code = f" {code}" if code else ""
            raise _CallFailed(f"{what}: HTTP {exc.status}{code}: {scrub(str(exc), self.token)}", exc.status) from None
        except RequestTimeoutError:
            raise _CallFailed(f"{what}: timed out after {self.spec.timeout_s:g}s") from None
        except NotionClientErrorBase as exc:
            raise _CallFailed(f"{what}: {scrub(str(exc), self.token)}") from None
        except FetchError as exc:
            raise _CallFailed(scrub(str(exc), self.token)) from None
        except httpx.HTTPError as exc:
            raise _CallFailed(f"{what}: {type(exc).__name__}: {scrub(str(exc), self.token)}") from None
        except ValueError:  # a body that is not JSON
            raise _CallFailed(f"{what}: the answer is not JSON") from None
        if not isinstance(data, dict):
            raise _CallFailed(f"{what}: the answer is not a JSON object")
        return data

    # -- listing ---------------------------------------------------------------------------
    def _database_pages(self, database_id: str) -> list[dict[str, Any]]:
        """The pages of every data source of a database, paginated, `max_pages` at most."""
        db = self._call(f"database {database_id}", self.notion.databases.retrieve, database_id)
        sources = [s.get("id") for s in db.get("data_sources") or [] if isinstance(s, dict) and s.get("id")]
        if not sources:
            raise _CallFailed(f"database {database_id}: it has no data sources the integration can read")
        pages: list[dict[str, Any]] = []
        for source_id in sources:
            cursor: str | None = None
            while len(pages) < self.spec.max_pages:
                body: dict[str, Any] = {"page_size": PAGE_SIZE, "result_type": "page"}
                if cursor:
                    body["start_cursor"] = cursor
                data = self._call(f"database {database_id}", self.notion.data_sources.query, source_id, **body)
                pages.extend(p for p in data.get("results") or [] if isinstance(p, dict) and p.get("object") == "page")
                cursor = data.get("next_cursor") if data.get("has_more") else None
                if not cursor:
                    break
        return pages

    def _listing(self, out: Collected) -> list[dict[str, Any]]:
        """The page objects of the source (no blocks). A database that cannot be queried, or a
        refused token, fails the sync; a page named by id that cannot be read is a failed entry;
        one that is gone (404) is left out, so the sync removes it."""
        pages: dict[str, dict[str, Any]] = {}
        for database_id in dict.fromkeys(dashed(d) for d in self.spec.databases if d.strip()):
            try:
                for page in self._database_pages(database_id):
                    pages.setdefault(str(page.get("id")), page)
            except _CallFailed as exc:
                raise SourceFailed(f"could not be listed: {exc}") from None
        errors: list[str] = []
        wanted = [p for p in dict.fromkeys(dashed(p) for p in self.spec.pages if p.strip()) if p not in pages]
        for page_id in wanted:
            try:
                pages[page_id] = self._call(f"page {page_id}", self.notion.pages.retrieve, page_id)
            except _CallFailed as exc:
                if exc.status == 401:
                    raise SourceFailed(str(exc)) from None
                if exc.status != 404:
                    out.failed.append((self.doc_id(page_id), str(exc)))
                    errors.append(str(exc))
        if errors and len(errors) == len(wanted) and not self.spec.databases:
            out.failed.clear()
            raise SourceFailed(f"none of its pages could be read: {errors[0]}")
        live = [p for p in pages.values() if not p.get("in_trash") and not p.get("archived")]
        return live[: self.spec.max_pages]

    # -- reading ---------------------------------------------------------------------------
    def doc_id(self, page_id: str) -> str:
        return f"{self.spec.doc_prefix}{page_id}"

    def collect(self, known: dict[str, PageState], progress: Progress | None = None) -> Collected:
        check_base(self.spec)
        out = Collected()
        pages = self._listing(out)
        for n, page in enumerate(pages, start=1):
            page_id = dashed(str(page.get("id")))
            doc_id = self.doc_id(page_id)
            url = str(page.get("url") or "")
            version = str(page.get("last_edited_time") or "")
            before = known.get(doc_id)
            if before is not None and version and before.version == version and before.url == url:
                out.kept.add(doc_id)
            else:
                self._read(page, page_id, doc_id, url, version, out)
            if progress:
                progress("reading", n, len(pages))
        out.fetched = self.transport.requests
        return out

    def _read(self, page: dict[str, Any], page_id: str, doc_id: str, url: str, version: str, out: Collected) -> None:
        title = page_title(page) or page_id
        try:
            lines = self._blocks(page_id, 0, 0, [0])
        except _TooLarge:
            out.failed.append((doc_id, f"its text is over the limit of {self.spec.max_page_bytes} bytes"))
            return
        except _CallFailed as exc:
            if exc.status == 401:
                raise SourceFailed(str(exc)) from None
            if exc.status != 404:  # 404: deleted since the listing, gone
                out.failed.append((doc_id, str(exc)))
            return
        text = "\n".join([f"# {' '.join(title.split()) or page_id}", "", *lines]).strip() + "\n"
        doc = to_document(text.encode("utf-8"), "page.md", doc_id, f"{self.spec.source_prefix}{url or page_id}", url,
                          anchors=False)  # Notion links a heading by its block id, not its words
        if isinstance(doc, str):
            out.failed.append((doc_id, doc))
            return
        doc.title = title
        out.docs.append(doc)
        out.states[doc_id] = PageState(url=url, version=version)

    def _blocks(self, block_id: str, level: int, indent: int, size: list[int]) -> list[str]:
        """A block's children as Markdown lines, paginated, nested ones MAX_DEPTH levels deep
        (`indent`: how deep in lists); `size` counts the bytes so far, bounded by max_page_bytes."""
        lines: list[str] = []
        cursor: str | None = None
        while True:
            query: dict[str, Any] = {"page_size": PAGE_SIZE}
            if cursor:
                query["start_cursor"] = cursor
            data = self._call(f"blocks of {block_id}", self.notion.blocks.children.list, block_id, **query)
            for block in data.get("results") or []:
                if not isinstance(block, dict):
                    continue
                kind = str(block.get("type") or "")
                listed = kind in LISTED
                children: list[str] = []
                if block.get("has_children") and level < MAX_DEPTH and kind not in ("child_page", "child_database"):
                    children = self._blocks(str(block.get("id")), level + 1, indent + 1 if listed else indent, size)
                    if kind == "table":
                        children = table_lines(children)
                rendered = block_markdown(block, children, indent)
                if not listed and kind != "table_row" and lines and lines[-1] != "":
                    lines.append("")
                lines.extend(rendered)
                size[0] += max(0, _bytes(rendered) - _bytes(children))  # children were counted below
                if size[0] > self.spec.max_page_bytes:
                    raise _TooLarge()
            cursor = data.get("next_cursor") if data.get("has_more") else None
            if not cursor:
                return lines

    def close(self) -> None:
        self.notion.close()


def _bytes(lines: list[str]) -> int:
    return sum(len(line.encode("utf-8", "replace")) + 1 for line in lines)
