"""A Confluence space, or a set of its pages, as a source: read through Confluence's content
REST API (`/rest/api/content`), which Confluence Cloud (under `/wiki`) and Server / Data Center
answer alike. A Server / Data Center personal access token is sent as a Bearer token; with
`user_env` set, the e-mail and API token of a Cloud account as basic auth.

Why the listing asks for versions only: a page whose version number equals the one stored at
the last sync is kept without its body being fetched again, so an unchanged re-sync costs one
request per 50 pages. Its body (storage format, which is XHTML) is read as a saved web page is.

Why plain httpx and not atlassian-python-api: that client sends its calls through requests'
own redirect following and reads bodies whole, so neither the address rule at every hop nor
the size limit could be kept without reaching into requests; it picks its Cloud or Server
implementation by host name, so a local stand-in would test the one Cloud users do not run;
and its pager follows `_links.next` wherever it points, the token with it. Two GET endpoints
with documented JSON are little code on the guarded client of sources/wikis.py.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import httpx

from storage.ingestion.sources.base import Collected, Progress, SourceFailed, SourceSpec, to_document
from storage.ingestion.sources.fetch import REDIRECTS, FetchError
from storage.ingestion.sources.wikis import ApiTransport, api_client, check_base, obj, scrub
from storage.records.source_state import PageState

PAGE_SIZE = 50
_CDATA = re.compile(r"<!\[CDATA\[(.*?)\]\]>", re.S)
_PARAMETER = re.compile(r"<ac:parameter\b[^>]*>.*?</ac:parameter>", re.S)
_PLAIN_BODY = re.compile(r"<(/?)ac:plain-text-body\b[^>]*>")
_INLINE = re.compile(r"</?(?:strong|em|b|i|u|s|span|a|code|sub|sup|del|ins|font|small|big|mark|abbr|time|"
                     r"ac:link|ac:link-body|ac:plain-text-link-body|ac:emoticon|ri:[a-z-]+)\b[^>]*>")


class _CallFailed(Exception):
    """One API call failed; the message says why, without the token."""


class _Refused(_CallFailed):
    """The API answered 401 or 403."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


@dataclass
class _Listed:
    page_id: str
    title: str
    version: str
    webui: str


def storage_to_html(title: str, storage: str) -> str:
    """A page's storage-format body as an HTML page: the title as its <h1>, code macros' text
    (CDATA, which HTML parsers drop) as <pre> text, macro parameters left out, and inline tags
    (bold, links, mentions) unwrapped to their text: on a short page the main-text extraction
    otherwise breaks a sentence at each of them, and the loader drops what no longer matches."""
    body = _INLINE.sub("", _PARAMETER.sub("", storage))
    body = _CDATA.sub(lambda m: html.escape(m.group(1)), body)
    body = _PLAIN_BODY.sub(lambda m: f"<{m.group(1)}pre>", body)
    name = html.escape(title)
    return f"<html><head><title>{name}</title></head><body><article><h1>{name}</h1>{body}</article></body></html>"


class ConfluenceConnector:
    """Reads one `kind = "confluence"` source."""

    def __init__(self, spec: SourceSpec, token: str, user: str = "") -> None:
        self.spec = spec
        self.base = spec.url.rstrip("/")
        self.token = token
        self.transport = ApiTransport(spec)
        if user:  # Confluence Cloud: the account's e-mail and an API token
            self.client = api_client(self.transport, auth=httpx.BasicAuth(user, token))
        else:  # Server / Data Center: a personal access token
            self.client = api_client(self.transport, {"Authorization": f"Bearer {token}"})

    # -- one call --------------------------------------------------------------------------
    def _get(self, path: str, params: dict[str, Any]) -> dict[str, Any] | None:
        """The JSON object an API call answers, or None when it answers 404."""
        url = self.base + path
        shown = f"{url} ({', '.join(f'{k}={v}' for k, v in params.items())})" if params else url
        try:
            response = self.client.get(url, params=params)
        except FetchError as exc:
            raise _CallFailed(scrub(str(exc), self.token)) from None
        except httpx.TimeoutException:
            raise _CallFailed(f"{url}: timed out after {self.spec.timeout_s:g}s") from None
        except httpx.HTTPError as exc:
            raise _CallFailed(f"{url}: {type(exc).__name__}: {scrub(str(exc), self.token)}") from None
        status = response.status_code
        if status == 404:
            return None
        if status in (401, 403):
            raise _Refused(f"{shown}: HTTP {status} (the token was refused or may not read this)", status)
        if status in REDIRECTS:
            raise _CallFailed(f"{url}: HTTP {status}, a redirect (not followed with a token: set url to the "
                              "address Confluence answers at)")
        if status != 200:
            raise _CallFailed(f"{shown}: HTTP {status}")
        try:
            data = response.json()
        except ValueError:
            raise _CallFailed(f"{shown}: the answer is not JSON") from None
        if not isinstance(data, dict):
            raise _CallFailed(f"{shown}: the answer is not a JSON object")
        return data

    # -- listing ---------------------------------------------------------------------------
    def _space_pages(self) -> list[_Listed]:
        """Every page of the space, with its version (no bodies), `max_pages` at most. Any
        failure here fails the sync: a partial listing would remove the pages it missed."""
        key = self.spec.space
        try:
            if self._get(f"/rest/api/space/{quote(key, safe='~')}", {}) is None:
                raise SourceFailed(f"the space {key!r} was not found at {self.base} (or the token cannot see it)")
            found: list[_Listed] = []
            start = 0
            while len(found) < self.spec.max_pages:
                params = {"spaceKey": key, "type": "page", "status": "current", "expand": "version",
                          "start": start, "limit": PAGE_SIZE}
                data = self._get("/rest/api/content", params)
                if data is None:
                    raise SourceFailed(f"the space {key!r} was not found at {self.base} (or the token cannot see it)")
                results = data.get("results")
                if not isinstance(results, list):
                    raise SourceFailed(f"the listing of space {key!r} has no results list")
                found.extend(p for p in map(_listed, results) if p is not None)
                if not results or not obj(data.get("_links")).get("next"):
                    break
                start += len(results)
        except _CallFailed as exc:
            raise SourceFailed(f"the space {key!r} could not be listed: {exc}") from None
        return found[: self.spec.max_pages]

    def _configured_pages(self, have: set[str], out: Collected) -> list[_Listed]:
        """The pages named by id (those the space listing did not already give): their
        versions, no bodies. A page that answers 404 is gone; 401 fails the sync."""
        found: list[_Listed] = []
        errors: list[str] = []
        wanted = [p for p in dict.fromkeys(str(p).strip() for p in self.spec.pages) if p and p not in have]
        for page_id in wanted:
            try:
                data = self._get(f"/rest/api/content/{quote(page_id, safe='')}", {"expand": "version"})
            except _Refused as exc:
                if exc.status == 401:
                    raise SourceFailed(str(exc)) from None
                out.failed.append((self.doc_id(page_id), str(exc)))
                errors.append(str(exc))
                continue
            except _CallFailed as exc:
                out.failed.append((self.doc_id(page_id), str(exc)))
                errors.append(str(exc))
                continue
            page = _listed(data) if data is not None else None
            if page is not None:
                found.append(page)
        if errors and len(errors) == len(wanted) and not have:
            out.failed.clear()
            raise SourceFailed(f"none of its pages could be read: {errors[0]}")
        return found

    # -- reading ---------------------------------------------------------------------------
    def doc_id(self, page_id: str) -> str:
        return f"{self.spec.doc_prefix}{page_id}"

    def collect(self, known: dict[str, PageState], progress: Progress | None = None) -> Collected:
        check_base(self.spec)
        out = Collected()
        pages = self._space_pages() if self.spec.space else []
        pages += self._configured_pages({p.page_id for p in pages}, out)
        pages = pages[: self.spec.max_pages]
        for n, page in enumerate(pages, start=1):
            doc_id = self.doc_id(page.page_id)
            url = self.base + page.webui if page.webui else ""
            before = known.get(doc_id)
            if before is not None and page.version and before.version == page.version and before.url == url:
                out.kept.add(doc_id)
            else:
                self._read(page, doc_id, out)
            if progress:
                progress("reading", n, len(pages))
        out.fetched = self.transport.requests
        return out

    def _read(self, page: _Listed, doc_id: str, out: Collected) -> None:
        try:
            data = self._get(f"/rest/api/content/{quote(page.page_id, safe='')}", {"expand": "body.storage,version"})
        except _CallFailed as exc:
            if isinstance(exc, _Refused) and exc.status == 401:
                raise SourceFailed(str(exc)) from None
            out.failed.append((doc_id, str(exc)))
            return
        if data is None:  # deleted between the listing and now: gone
            return
        read = _listed(data) or page
        value = obj(obj(data.get("body")).get("storage")).get("value")
        if not isinstance(value, str):
            out.failed.append((doc_id, "the page has no storage-format body"))
            return
        if len(value.encode("utf-8", "replace")) > self.spec.max_page_bytes:
            out.failed.append((doc_id, f"its body is over the limit of {self.spec.max_page_bytes} bytes"))
            return
        url = self.base + read.webui if read.webui else ""
        source = f"{self.spec.source_prefix}{url or page.page_id}"
        doc = to_document(storage_to_html(read.title, value).encode(), "page.html", doc_id, source, url,
                          anchors=False)  # Confluence makes its heading anchors from the page title and words
        if isinstance(doc, str):
            out.failed.append((doc_id, doc))
            return
        doc.title = read.title or doc.title
        out.docs.append(doc)
        out.states[doc_id] = PageState(url=url, version=read.version)

    def close(self) -> None:
        self.client.close()


def _listed(item: Any) -> _Listed | None:
    """A content entry of the API (a listing's result or one page) as the sync reads it."""
    if not isinstance(item, dict) or item.get("id") in (None, ""):
        return None
    if item.get("type", "page") not in ("page", "blogpost"):  # a blog post named by id reads as a page
        return None
    number = obj(item.get("version")).get("number")
    webui = obj(item.get("_links")).get("webui")
    return _Listed(str(item["id"]), str(item.get("title") or ""), "" if number is None else str(number),
                   webui if isinstance(webui, str) and webui.startswith("/") else "")
