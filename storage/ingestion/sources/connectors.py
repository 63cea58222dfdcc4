"""Which connector reads a source, by its kind: the one place that knows them all (the
connectors themselves know only what they share in base.py, fetch.py and wikis.py)."""

from __future__ import annotations

from pathlib import Path

from storage.ingestion.sources.base import Collected, Connector, Progress, SourceFailed, SourceKind, SourceSpec
from storage.ingestion.sources.confluence import ConfluenceConnector
from storage.ingestion.sources.git import GitConnector
from storage.ingestion.sources.notion import NotionConnector
from storage.ingestion.sources.web import WebConnector
from storage.records.source_state import PageState

NOT_SET = "the environment variable {name} is not set (it holds the {kind} token)"


def connector_for(spec: SourceSpec, mirrors: Path, token: str = "", user: str = "") -> Connector:
    """The reader of one source. `mirrors` holds Git sources' mirrors (one folder per source);
    `token` and `user` are the values of the variables `token_env` and `user_env` name."""
    if spec.kind == SourceKind.WEB:
        return WebConnector(spec)
    if spec.kind == SourceKind.GIT:
        return GitConnector(spec, mirrors / spec.name, token)
    return wiki_connector(spec, token, user)


def wiki_connector(spec: SourceSpec, token: str, user: str = "") -> Connector:
    """The connector of a `confluence` or `notion` source (Confluence Cloud: e-mail and API token)."""
    if not token:
        return _Unusable(spec, NOT_SET.format(name=spec.token_env or "token_env", kind=spec.kind))
    if spec.kind == SourceKind.CONFLUENCE:
        if spec.user_env and not user:
            return _Unusable(spec, f"the environment variable {spec.user_env} is not set "
                                   "(the Confluence account's e-mail)")
        return ConfluenceConnector(spec, token, user)
    if spec.kind == SourceKind.NOTION:
        return NotionConnector(spec, token)
    return _Unusable(spec, f"{spec.kind.value!r} is not a wiki kind")


class _Unusable:
    """A wiki source that cannot be read at all (no token): every sync fails, saying why."""

    def __init__(self, spec: SourceSpec, why: str) -> None:
        self.spec = spec
        self.why = why

    def collect(self, known: dict[str, PageState], progress: Progress | None = None) -> Collected:
        raise SourceFailed(self.why)

    def close(self) -> None:
        return None
