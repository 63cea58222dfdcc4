"""A website as a source: its sitemap, or a crawl from a start page to a depth, within its site.

robots.txt is obeyed (its Crawl-delay too), include / exclude patterns pick the pages, every page
is fetched conditionally (an unchanged page answers 304 and is kept as it is), and its main text
is extracted as saved pages are (storage/ingestion/loaders.py, trafilatura). A page that cannot
be read is reported and left as it was; a page that answers 404/410, or left the sitemap, or is
no longer linked, is gone. A source can mirror a public site (`public_url`): pages are fetched
from `url`'s host and cited under the public URL.
"""

from __future__ import annotations

import fnmatch
import gzip
import io
import threading
import zlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from urllib.parse import urljoin, urlsplit, urlunsplit

from protego import Protego

from storage.documents import Document
from storage.ingestion.sources.base import Collected, Progress, SourceFailed, SourceSpec, to_document
from storage.ingestion.sources.fetch import GONE, USER_AGENT, Fetcher, FetchError
from storage.records.source_state import PageState

MAX_SITEMAPS = 50
# one page parsed at a time in the process: pages are fetched by several threads, but trafilatura
# and lxml parsing pages in several threads at once aborted the process (and once dropped a chunk)
_PARSING = threading.Lock()
NOT_PAGES = (".png", ".jpg", ".jpeg", ".gif", ".svg", ".webp", ".ico", ".css", ".js", ".zip", ".gz", ".tar",
             ".woff", ".woff2", ".ttf", ".mp4", ".mp3", ".xml", ".json", ".inv")
TYPES = {"text/html": "page.html", "application/xhtml+xml": "page.html", "text/markdown": "page.md",
         "text/x-markdown": "page.md", "text/plain": "page.txt", "application/pdf": "page.pdf"}


@dataclass
class _Page:
    url: str  # as cited (public)
    doc_id: str
    doc: Document | None = None
    state: PageState | None = None
    kept: bool = False
    error: str = ""
    links: list[str] = field(default_factory=list)


def _origin(url: str) -> str:
    p = urlsplit(url)
    return f"{p.scheme}://{p.netloc}/"


class WebConnector:
    """Reads one `kind = "web"` source."""

    def __init__(self, spec: SourceSpec, fetcher: Fetcher | None = None) -> None:
        self.spec = spec
        self.fetcher = fetcher or Fetcher(allow_private=spec.allow_private_addresses, timeout_s=spec.timeout_s,
                                          max_bytes=spec.max_page_bytes, max_redirects=spec.max_redirects,
                                          requests_per_second=spec.requests_per_second)
        self.mirror = _origin(spec.url)
        self.public = spec.public_url.rstrip("/") + "/" if spec.public_url else ""
        self.site = urlsplit(self.to_public(spec.url)).netloc

    # -- where a page is fetched and how it is cited -----------------------------------
    def to_fetch(self, url: str) -> str:
        return self.mirror + url[len(self.public):] if self.public and url.startswith(self.public) else url

    def to_public(self, url: str) -> str:
        return self.public + url[len(self.mirror):] if self.public and url.startswith(self.mirror) else url

    def doc_id(self, url: str) -> str:
        p = urlsplit(url)
        return f"{self.spec.doc_prefix}{p.path.lstrip('/') or 'index'}{'?' + p.query if p.query else ''}"

    def wanted(self, url: str) -> bool:
        """In the site, a page (not an asset), and picked by include / exclude."""
        p = urlsplit(url)
        if p.netloc != self.site or p.scheme not in ("http", "https") or p.path.lower().endswith(NOT_PAGES):
            return False
        if self.spec.include and not any(fnmatch.fnmatch(p.path, pat) for pat in self.spec.include):
            return False
        return not any(fnmatch.fnmatch(p.path, pat) for pat in self.spec.exclude)

    # -- reading ---------------------------------------------------------------------------
    def collect(self, known: dict[str, PageState], progress: Progress | None = None) -> Collected:
        robots = self._robots()
        out = Collected()
        if _is_sitemap(self.spec.url):
            urls = [u for u in self._sitemap_urls(self.spec.url) if self.wanted(u)]
            pages = self._read_all(urls[: self.spec.max_pages], known, robots, progress)
        else:
            pages = self._crawl(known, robots, progress)
        for page in pages:
            if page.kept:
                out.kept.add(page.doc_id)
            elif page.error:
                out.failed.append((page.doc_id, page.error))
            elif page.doc is not None:
                out.docs.append(page.doc)
            if page.state is not None:
                out.states[page.doc_id] = page.state
        out.fetched = self.fetcher.requests
        return out

    def _robots(self) -> Protego | None:
        try:
            got = self.fetcher.get(self.mirror + "robots.txt", max_bytes=500_000)
        except FetchError as exc:
            raise SourceFailed(f"robots.txt could not be read: {exc}") from None
        if got.status != 200:
            return None
        robots = Protego.parse(got.body.decode("utf-8", "replace"))
        delay = robots.crawl_delay(USER_AGENT)
        if delay:
            self.fetcher.set_rate(min(self.spec.requests_per_second, 1 / max(float(delay), 0.1)))
        return robots

    def _sitemap_urls(self, url: str) -> list[str]:
        """The page URLs a sitemap (or a sitemap index, followed up to MAX_SITEMAPS) lists."""
        from lxml import etree

        todo, seen, pages = [url], set[str](), list[str]()
        while todo and len(seen) < MAX_SITEMAPS:
            current = todo.pop(0)
            if current in seen:
                continue
            seen.add(current)
            try:
                got = self.fetcher.get(self.to_fetch(current), max_bytes=self.spec.max_page_bytes * 10)
            except FetchError as exc:
                raise SourceFailed(f"the sitemap could not be read: {exc}") from None
            if got.status != 200:
                raise SourceFailed(f"the sitemap {current} answered HTTP {got.status}")
            body = _gunzip(got.body, self.spec.max_page_bytes * 20) if current.endswith(".gz") else got.body
            parser = etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=False, recover=False)
            try:
                root = etree.fromstring(body, parser=parser)
            except etree.XMLSyntaxError as exc:
                raise SourceFailed(f"the sitemap {current} is not valid XML: {exc}") from None
            locs = [(el.text or "").strip() for el in root.iter("{*}loc")]
            if etree.QName(root).localname == "sitemapindex":
                todo.extend(loc for loc in locs if loc)
            else:
                pages.extend(loc for loc in locs if loc)
        return list(dict.fromkeys(pages))

    def _read_all(self, urls: list[str], known: dict[str, PageState], robots: Protego | None,
                  progress: Progress | None) -> list[_Page]:
        done: list[_Page] = []
        with ThreadPoolExecutor(max_workers=max(1, self.spec.concurrency), thread_name_prefix="sync") as pool:
            for page in pool.map(lambda u: self._read(u, known, robots), urls):
                done.append(page)
                if progress:
                    progress("fetching", len(done), len(urls))
        return done

    def _crawl(self, known: dict[str, PageState], robots: Protego | None, progress: Progress | None) -> list[_Page]:
        """Breadth first from the start page, `max_depth` links deep, `max_pages` at most. An
        unchanged (304) or unreadable page is followed through the links stored for it."""
        start = self.to_public(self.spec.url)
        frontier, seen, pages = [start], {start}, list[_Page]()
        for _depth in range(self.spec.max_depth + 1):
            room = self.spec.max_pages - len(pages)
            if not frontier or room <= 0:
                break
            level = self._read_all(frontier[:room], known, robots, progress)
            if not pages and level and level[0].error and level[0].doc_id not in known:
                raise SourceFailed(f"the start page could not be read: {level[0].error}")
            pages.extend(level)
            frontier = []
            for page in level:
                links = page.links or (known[page.doc_id].links if page.doc_id in known else [])
                for link in links:
                    if link not in seen and self.wanted(link):
                        seen.add(link)
                        frontier.append(link)
        return [p for p in pages if p.url != start or self.wanted(p.url)]  # the start page is read for its links

    def _read(self, url: str, known: dict[str, PageState], robots: Protego | None) -> _Page:
        doc_id = self.doc_id(url)
        page = _Page(url, doc_id)
        fetch_url = self.to_fetch(url)
        if robots is not None and not robots.can_fetch(fetch_url, USER_AGENT):
            return page  # disallowed now: never fetched, and gone from the index like a 404
        before = known.get(doc_id)
        try:
            got = self.fetcher.get(fetch_url, etag=before.etag if before else "",
                                   last_modified=before.last_modified if before else "")
        except FetchError as exc:
            page.error = str(exc)
            return page
        if got.status in GONE:
            return page  # neither read nor kept: the sync removes it
        if got.status == 304 and before is not None:
            page.kept = True
        elif got.status == 304:
            page.error = "answered 304 to an unconditional request"
        else:
            self._parse(page, got.body, got.content_type, fetch_url)
            page.state = PageState(url, got.etag, got.last_modified, "", page.links)
        return page

    def _parse(self, page: _Page, body: bytes, content_type: str, fetch_url: str) -> None:
        with _PARSING:  # trafilatura and lxml are not safe to run in several threads at once
            self._parse_one(page, body, content_type, fetch_url)

    def _parse_one(self, page: _Page, body: bytes, content_type: str, fetch_url: str) -> None:
        name = TYPES.get(content_type.split(";", 1)[0].strip().lower())
        if name is None:
            page.error = f"not a document (content type {content_type[:80]!r})"
            return
        if name == "page.html":
            page.links = self._links(body, fetch_url)
        # an HTML page's sections are cited at their headings' anchors; a file served as it is has none
        read = to_document(body, name, page.doc_id, self.spec.source_prefix + page.url, page.url,
                           anchors=name == "page.html")
        if isinstance(read, str):
            page.error = read
        else:
            page.doc = read

    def _links(self, body: bytes, fetch_url: str) -> list[str]:
        import lxml.html
        from lxml.etree import ParserError

        try:
            root = lxml.html.document_fromstring(body)
        except (ParserError, ValueError):
            return []
        found: list[str] = []
        for element, attribute, link, _pos in root.iterlinks():
            if element.tag == "a" and attribute == "href":
                p = urlsplit(urljoin(fetch_url, link.strip()))
                found.append(self.to_public(urlunsplit((p.scheme, p.netloc, p.path or "/", p.query, ""))))
        return list(dict.fromkeys(found))[:1000]

    def close(self) -> None:
        self.fetcher.close()


def _is_sitemap(url: str) -> bool:
    path = urlsplit(url).path.lower()
    return path.endswith((".xml", ".xml.gz")) or "sitemap" in path.rsplit("/", 1)[-1]


def _gunzip(data: bytes, limit: int) -> bytes:
    """A gzipped sitemap, refused past `limit` bytes unpacked (a small file can unpack huge)."""
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as fh:
            out = fh.read(limit + 1)
    except (OSError, EOFError, zlib.error) as exc:
        raise SourceFailed(f"the sitemap is not valid gzip: {exc}") from None
    if len(out) > limit:
        raise SourceFailed(f"the sitemap unpacks to more than {limit} bytes")
    return out
