"""The rules a source is read by, without a server: which addresses are refused, how a mirrored
site's pages are fetched and cited, which pages and files a source picks."""

from __future__ import annotations

from pathlib import Path

import pytest

from storage.ingestion.sources.base import SourceFailed, SourceSpec
from storage.ingestion.sources.fetch import FetchError, check_address
from storage.ingestion.sources.git import GitConnector
from storage.ingestion.sources.web import WebConnector


@pytest.mark.parametrize("url", ["http://127.0.0.1:8080/", "http://localhost/", "http://10.0.0.5/", "http://[::1]/",
                                 "http://169.254.169.254/latest/meta-data/", "http://192.168.1.1/"])
def test_private_loopback_and_link_local_addresses_are_refused(url: str) -> None:
    with pytest.raises(FetchError, match="private or loopback"):
        check_address(url, allow_private=False)
    check_address(url, allow_private=True)


@pytest.mark.parametrize("url", ["file:///etc/passwd", "gopher://127.0.0.1/", "ftp://example.com/x"])
def test_only_http_and_https_are_fetched(url: str) -> None:
    with pytest.raises(FetchError, match="only http and https"):
        check_address(url, allow_private=True)


def test_ssh_repositories_follow_the_same_address_rule(tmp_path: Path) -> None:
    for url in ("git@127.0.0.1:guild/handbook.git", "ssh://git@localhost:2222/guild/handbook.git"):
        with pytest.raises(SourceFailed, match="private or loopback"):
            GitConnector(SourceSpec("h", "git", url), tmp_path)._remote()


def test_a_mirrored_site_is_fetched_from_the_mirror_and_cited_under_its_public_url() -> None:
    web = WebConnector(SourceSpec("site", "web", "http://127.0.0.1:9000/sitemap.xml",
                                  public_url="https://docs.example.com", exclude=("/blog/*",)))
    assert web.to_fetch("https://docs.example.com/guide/") == "http://127.0.0.1:9000/guide/"
    assert web.to_public("http://127.0.0.1:9000/guide/?v=2") == "https://docs.example.com/guide/?v=2"
    assert web.doc_id("https://docs.example.com/") == "site:index"
    assert web.doc_id("https://docs.example.com/guide/?v=2") == "site:guide/?v=2"
    assert web.wanted("https://docs.example.com/guide/")
    assert not web.wanted("https://docs.example.com/blog/2026/")  # excluded
    assert not web.wanted("https://other.example.com/guide/")  # another site
    assert not web.wanted("https://docs.example.com/assets/logo.png")  # not a page


def test_a_repository_source_picks_its_folders_and_readable_files(tmp_path: Path) -> None:
    git = GitConnector(SourceSpec("h", "git", str(tmp_path), paths=("docs",), exclude=("docs/drafts/*",)), tmp_path)
    assert git.wanted("docs/intro.md") and git.wanted("docs/faq/questions.yaml")
    assert not git.wanted("README.md")  # outside the folders
    assert not git.wanted("docs/logo.png") and not git.wanted("docs/.hidden/x.md")
    assert not git.wanted("docs/drafts/next.md")
