"""What every connector shares: a source's settings, what one read of it collected, and how a
source failing as a whole is told apart from one document failing.

Why this split: a connector only reads (a site, a repository, a wiki) and says which documents
it read, which it knows to be unchanged and which it could not read; what the index does with
that (write, keep, remove in one commit) is decided once, in storage/ingestion/sources/sync.py.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Protocol

from storage.documents import Document
from storage.ingestion.loaders import LoadError, load_content
from storage.records.source_state import PageState


class SourceKind(StrEnum):
    """What a `[[sources]]` entry reads, and so which connector reads it."""

    WEB = "web"
    GIT = "git"
    CONFLUENCE = "confluence"
    NOTION = "notion"


KINDS = tuple(SourceKind)
Progress = Callable[[str, int, int], None]  # (phase, done, total)


@dataclass(frozen=True)
class SourceSpec:
    """One `[[sources]]` entry of config.toml, as the connectors read it (bot/source_settings.py checks it)."""

    name: str
    """The source's name: 1-64 letters, digits, '.', '_' or '-' (its documents' ids start with it)."""
    kind: SourceKind
    """The kind of source: web, git, confluence or notion."""
    url: str
    """A sitemap or a start page (web), a repository (git), the wiki API's address (confluence, notion)."""
    scopes: tuple[str, ...] = ()
    """The [[scopes]] its documents belong to (required when scopes are configured)."""
    interval: float = 0.0
    """How often `serve` syncs it: "30m", "6h", "1d" or seconds (at least 60); "" or 0 = only when asked."""
    allow_private_addresses: bool = False
    """Loopback and private networks are refused unless true."""
    include: tuple[str, ...] = ()
    """Glob patterns over a page's URL path or a file's path; none = all."""
    exclude: tuple[str, ...] = ()
    """Glob patterns of pages or files left out."""
    max_pages: int = 1000
    """At most this many pages or files per sync."""
    max_page_bytes: int = 5_000_000
    """A larger page or file is not ingested (reported as failed)."""
    timeout_s: float = 20.0
    """Seconds per request."""
    public_url: str = ""
    """For web: the site `url` mirrors; pages under it are fetched from url's host and cited as it."""
    max_depth: int = 2
    """For web: how many links deep a crawl from a start page goes (a sitemap is read whole)."""
    requests_per_second: float = 2.0
    """For web: the crawl's requests per second."""
    concurrency: int = 4
    """For web: how many requests run at once."""
    max_redirects: int = 5
    """For web: the redirects followed per page (each hop's address is checked)."""
    branch: str = ""
    """For git: the branch; "" is the repository's default branch."""
    paths: tuple[str, ...] = ()
    """For git: the sub-folders of the repository to read; none reads all of it."""
    web_url: str = ""
    """For git: a file's page in the repository's web view, "{commit}" and "{path}" filled in (the citation link)."""
    space: str = ""
    """For confluence: a space key."""
    pages: tuple[str, ...] = ()
    """For confluence and notion: page ids."""
    databases: tuple[str, ...] = ()
    """For notion: database ids."""
    token_env: str = ""
    """The environment variable holding the token (never the token itself)."""
    user_env: str = ""
    """Confluence Cloud: the variable holding the account's e-mail."""

    @property
    def doc_prefix(self) -> str:
        """Every document id of this source starts with it (which documents a sync owns)."""
        return f"{self.name}:"

    @property
    def source_prefix(self) -> str:
        """Every stored `source` of this source's documents starts with it."""
        return f"sync:{self.name}:"


def to_document(data: bytes, name: str, doc_id: str, source: str, url: str,
                anchors: bool = True) -> Document | str:
    """A document read from a source's bytes as the file loaders read a file of that `name`,
    cited at `url`, each section at its `#anchor` there (a web page's heading ids, a Markdown
    file's heading slugs as a Git forge renders them; `anchors` false where the page's own links
    to its headings are made otherwise, as a wiki's are); or why it cannot be (it is then reported
    as failed, and left as it was)."""
    try:
        doc = load_content(data, name, doc_id, source)
    except (LoadError, ValueError) as exc:
        return f"cannot be read: {exc}"
    if not doc.sections and not doc.faqs:
        return "no text"
    doc.url = url
    if not anchors:
        for section in doc.sections:
            section.anchor = ""
    return doc


class FetchError(Exception):
    """One URL could not be fetched; the message says why, without credentials."""


class SourceFailed(Exception):
    """The source as a whole could not be read (DNS, a 5xx on its sitemap, a refused token, a
    fetch of the repository): nothing of it is changed in the index."""


@dataclass
class Collected:
    """One read of a source."""

    docs: list[Document] = field(default_factory=list)  # read this time (new, changed or re-read)
    kept: set[str] = field(default_factory=set)  # known unchanged without reading them again
    failed: list[tuple[str, str]] = field(default_factory=list)  # (doc id, why): left as they were
    states: dict[str, PageState] = field(default_factory=dict)  # doc id -> its state to store
    fetched: int = 0  # requests made (pages, files, API calls), for the report and the benchmark


class Connector(Protocol):
    """Reads one source. `known` holds the states of the documents the index has as the last
    sync left them; a connector may answer "unchanged" (kept) only for those."""

    spec: SourceSpec

    def collect(self, known: dict[str, PageState], progress: Progress | None = None) -> Collected: ...

    def close(self) -> None: ...
