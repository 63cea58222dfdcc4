"""A Git repository as a source: fetched with dulwich (a maintained pure-Python Git client: no
git binary needed on the server) into a bare mirror under the data folder, and read from the
branch's tree without a checkout. A file whose blob id did not change since the last sync is
kept without being read; a renamed file is a removal and an addition; a file deleted from the
branch is removed. Citations link the file at the synced commit when `web_url` is configured.

Over http(s), dulwich's urllib3 connections dial through the address guard of addresses.py (the
name resolved once per connection, every address checked, the connection made to a checked one;
redirects too), and no proxy is taken from the environment. Over ssh, ssh itself resolves and
connects: the host is checked when the sync starts, but a name that resolves differently a moment
later is not caught there (ssh's host key check against known_hosts is what stands in its way).
"""

from __future__ import annotations

import fnmatch
import logging
from pathlib import Path, PurePosixPath
from urllib.parse import urlsplit

from storage.documents import Document
from storage.ingestion.loaders import SUFFIXES
from storage.ingestion.sources.addresses import AddressGuard, guarded_pool_manager
from storage.ingestion.sources.base import Collected, Progress, SourceFailed, SourceSpec, to_document
from storage.ingestion.sources.fetch import FetchError, check_address
from storage.records.source_state import PageState

log = logging.getLogger(__name__)


class GitConnector:
    """Reads one `kind = "git"` source."""

    def __init__(self, spec: SourceSpec, mirror: Path, token: str = "", guard: AddressGuard | None = None) -> None:
        self.spec = spec
        self.mirror = mirror
        self.token = token
        self.guard = guard or AddressGuard(spec.allow_private_addresses)

    def _remote(self) -> tuple[object, str]:
        from dulwich.client import default_user_agent_string, get_transport_and_path

        url = self.spec.url
        if url.startswith(("http://", "https://")):
            try:
                check_address(url, self.spec.allow_private_addresses, self.guard)
            except FetchError as exc:
                raise SourceFailed(str(exc)) from None
            return get_transport_and_path(url, username="x-access-token" if self.token else None,
                                          password=self.token or None, quiet=True,
                                          pool_manager=guarded_pool_manager(self.guard, timeout=self.spec.timeout_s,
                                                                            headers={"User-agent": default_user_agent_string()}))
        if "://" not in url and ":" not in url.split("/", 1)[0]:  # a local path
            return get_transport_and_path(str(Path(url).expanduser().resolve()), quiet=True)
        host = urlsplit(url).hostname if "://" in url else url.split(":", 1)[0].rsplit("@", 1)[-1]
        try:  # ssh: the address rule as for https; the server's own keys and known_hosts
            check_address(f"https://{host}/", self.spec.allow_private_addresses, self.guard)
        except FetchError as exc:
            raise SourceFailed(str(exc).replace("https://", "ssh://", 1)) from None
        return get_transport_and_path(url, quiet=True)

    def _fetch(self) -> tuple[object, bytes]:
        """The mirror, fetched now, and the commit id of the branch to read."""
        from dulwich.errors import GitProtocolError, HangupException, NotGitRepository
        from dulwich.repo import Repo

        self.mirror.mkdir(parents=True, exist_ok=True)
        repo = Repo(str(self.mirror)) if (self.mirror / "HEAD").exists() else Repo.init_bare(str(self.mirror))
        client, path = self._remote()
        try:
            result = client.fetch(path, repo)  # type: ignore[attr-defined]
        except (GitProtocolError, HangupException, NotGitRepository, OSError) as exc:
            raise SourceFailed(f"the repository could not be fetched: {_safe(str(exc))}") from None
        except Exception as exc:  # transports raise many kinds (HTTP errors, SSH exits)
            raise SourceFailed(f"the repository could not be fetched: {type(exc).__name__}: {_safe(str(exc))}") from None
        refs = dict(result.refs or {})
        if self.spec.branch:
            want = f"refs/heads/{self.spec.branch}".encode()
        else:
            want = (result.symrefs or {}).get(b"HEAD") or b"refs/heads/main"
        commit = refs.get(want)
        if commit is None:
            raise SourceFailed(f"the repository has no branch {want.decode(errors='replace').removeprefix('refs/heads/')!r}")
        return repo, commit

    def wanted(self, path: str) -> bool:
        p = PurePosixPath(path)
        if any(part.startswith(".") for part in p.parts) or p.suffix.lower() not in SUFFIXES:
            return False
        if self.spec.paths and not any(path == f or path.startswith(f.strip("/") + "/") for f in self.spec.paths):
            return False
        if self.spec.include and not any(fnmatch.fnmatch(path, pat) for pat in self.spec.include):
            return False
        return not any(fnmatch.fnmatch(path, pat) for pat in self.spec.exclude)

    def collect(self, known: dict[str, PageState], progress: Progress | None = None) -> Collected:
        from dulwich.object_store import iter_tree_contents

        repo, commit_id = self._fetch()
        store = repo.object_store  # type: ignore[attr-defined]
        commit = store[commit_id]
        out = Collected()
        files = [(e.path.decode("utf-8", "replace"), e.sha) for e in iter_tree_contents(store, commit.tree)
                 if e.path is not None and e.sha is not None and e.mode is not None and e.mode & 0o170000 == 0o100000]
        files = [(p, sha) for p, sha in files if self.wanted(p)][: self.spec.max_pages]
        commit_hex = commit_id.decode()
        for n, (path, sha) in enumerate(files, start=1):
            doc_id = f"{self.spec.doc_prefix}{path}"
            version = sha.decode()
            before = known.get(doc_id)
            url = self.spec.web_url.format(commit=commit_hex, path=path) if self.spec.web_url else ""
            if before is not None and before.version == version and before.url == url:
                out.kept.add(doc_id)
            else:
                doc = self._read(store, sha, path, doc_id, url, out)
                if doc is not None:
                    out.docs.append(doc)
                    out.states[doc_id] = PageState(url=url, version=version)
            if progress:
                progress("reading", n, len(files))
        out.fetched = len(out.docs)
        return out

    def _read(self, store: object, sha: bytes, path: str, doc_id: str, url: str, out: Collected) -> Document | None:
        blob = store[sha]  # type: ignore[index]
        data = blob.as_raw_string()
        if len(data) > self.spec.max_page_bytes:
            out.failed.append((doc_id, f"{len(data)} bytes, over the limit of {self.spec.max_page_bytes}"))
            return None
        read = to_document(data, PurePosixPath(path).name, doc_id, f"{self.spec.source_prefix}{path}", url)
        if isinstance(read, str):
            out.failed.append((doc_id, read))
            return None
        return read

    def close(self) -> None:
        return None


def _safe(text: str) -> str:
    """An error message without credentials a URL may carry."""
    out = []
    for word in text.split():
        p = urlsplit(word) if "://" in word else None
        out.append(f"{p.scheme}://{p.hostname or ''}{p.path}" if p is not None and p.password else word)
    return " ".join(out)[:300]
