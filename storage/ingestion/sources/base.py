"""What every connector shares: a source's settings, what one read of it collected, and how a
source failing as a whole is told apart from one document failing.

Why this split: a connector only reads (a site, a repository, a wiki) and says which documents
it read, which it knows to be unchanged and which it could not read; what the index does with
that (write, keep, remove in one commit) is decided once, in storage/ingestion/sources/sync.py.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from storage.documents import Document
from storage.ingestion.loaders import LoadError, load_content
from storage.records.source_state import PageState

KINDS = ("web", "git", "confluence", "notion")
Progress = Callable[[str, int, int], None]  # (phase, done, total)


@dataclass(frozen=True)
class SourceSpec:
    """One `[[sources]]` entry of config.toml, as the connectors read it (bot/source_settings.py checks it)."""

    name: str
    kind: str
    url: str
    scopes: tuple[str, ...] = ()
    interval_s: float = 0.0  # how often `serve` syncs it; 0 = only when asked
    allow_private_addresses: bool = False  # loopback and private networks are refused unless true
    include: tuple[str, ...] = ()  # glob patterns over a page's URL path or a file's path; () = all
    exclude: tuple[str, ...] = ()
    max_pages: int = 1000
    max_page_bytes: int = 5_000_000
    timeout_s: float = 20.0
    # web
    public_url: str = ""  # the site `url` mirrors: pages under it are fetched from url's host, cited as it
    max_depth: int = 2  # a crawl from a start page (a sitemap is read whole)
    requests_per_second: float = 2.0
    concurrency: int = 4
    max_redirects: int = 5
    # git
    branch: str = ""  # "" = the repository's default branch
    paths: tuple[str, ...] = ()  # sub-folders of the repository; () = all of it
    web_url: str = ""  # a file's page in the repository's web view: "{commit}" and "{path}" filled in
    # confluence / notion
    space: str = ""
    pages: tuple[str, ...] = ()
    databases: tuple[str, ...] = ()
    token_env: str = ""  # the environment variable holding the token (never the token itself)
    user_env: str = ""  # Confluence Cloud: the variable holding the account's e-mail

    @property
    def doc_prefix(self) -> str:
        """Every document id of this source starts with it (which documents a sync owns)."""
        return f"{self.name}:"

    @property
    def source_prefix(self) -> str:
        """Every stored `source` of this source's documents starts with it."""
        return f"sync:{self.name}:"


def to_document(data: bytes, name: str, doc_id: str, source: str, url: str) -> Document | str:
    """A document read from a source's bytes as the file loaders read a file of that `name`,
    cited at `url`; or why it cannot be (it is then reported as failed, and left as it was)."""
    try:
        doc = load_content(data, name, doc_id, source)
    except (LoadError, ValueError) as exc:
        return f"cannot be read: {exc}"
    if not doc.sections and not doc.faqs:
        return "no text"
    doc.url = url
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
