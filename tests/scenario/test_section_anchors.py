"""Each section of a page carries its heading, as the page reads it, and the anchor that links to
it: on the real docs sites of three site generators (MkDocs Material, the MkDocs theme,
Docusaurus), on permalinks made the Sphinx and Hugo ways, and on Markdown files, whose anchors are
the heading slugs a Git forge renders. A chunk of a page with a URL is cited at `URL#anchor`."""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

import pytest

from storage.documents import Document, Section
from storage.ingestion.chunker import chunk_document, section_url
from storage.ingestion.loaders import load_html, load_markdown
from storage.ingestion.sources.base import to_document

SITES = Path(__file__).resolve().parents[3] / "shared" / "sites"


def site_page(site: str, page: str) -> Document:
    path = SITES / site / page / "index.html"
    if not path.is_file():
        pytest.skip(f"{path} is not here (the shared folder beside the repository)")
    return load_html(path.read_text(encoding="utf-8"), page, str(path), "page.html")


def sections_by_heading(doc: Document) -> dict[str, str]:
    return {s.heading: s.anchor for s in doc.sections}


@pytest.mark.parametrize(("site", "page", "heading", "anchor"), [
    ("starlette-docs", "middleware", "CORSMiddleware > Simple requests", "simple-requests"),  # MkDocs Material
    ("starlette-docs", "applications", "Storing state on the app instance", "storing-state-on-the-app-instance"),
    ("mkdocs-docs", "user-guide/configuration", "Project information > site_url", "site_url"),  # MkDocs theme, glyph \uf0c1
    ("ts-node-docs", "ts-node/docs/troubleshooting", "Common errors > ERR_REQUIRE_ESM", "err_require_esm"),  # Docusaurus
    ("ts-node-docs", "ts-node/docs/troubleshooting", "Common errors > SyntaxError > Unsupported JavaScript syntax",
     "unsupported-javascript-syntax"),
])
def test_a_real_sites_sections_carry_their_heading_and_its_anchor(site: str, page: str, heading: str,
                                                                  anchor: str) -> None:
    assert sections_by_heading(site_page(site, page))[heading] == anchor


# pages whose headings have no id at all (a landing page's feature list, a sponsors' page)
NO_IDS = {"mkdocs-docs/index.html", "starlette-docs/sponsorship/index.html"}


@pytest.mark.parametrize("site", ["starlette-docs", "mkdocs-docs", "ts-node-docs"])
def test_every_heading_of_a_real_site_is_clean_and_every_anchor_is_an_id_of_its_page(site: str) -> None:
    folder = SITES / site
    if not folder.is_dir():
        pytest.skip(f"{folder} is not here")
    headed = 0
    unanchored: set[str] = set()
    for path in sorted(folder.rglob("index.html")):
        html = path.read_text(encoding="utf-8")
        ids = set(re.findall(r"""\bid=["']?([^"'\s>]+)""", html))
        for s in load_html(html, "page", str(path), "page.html").sections:
            assert not any(ch in "¶§" or unicodedata.category(ch) in ("Co", "Cf") for ch in s.heading), s.heading
            assert s.heading == " ".join(s.heading.split())
            headed += bool(s.heading)
            if s.anchor:
                assert s.anchor in ids, (path, s.heading, s.anchor)
            elif s.heading:
                unanchored.add(path.relative_to(SITES).as_posix())
    assert headed > 40 and unanchored <= NO_IDS, unanchored


def test_permalinks_the_sphinx_and_hugo_ways_and_headings_without_ids() -> None:
    html = """<html><head><link rel="canonical" href="https://docs.example.org/guide/"></head><body><main>
    <h1>Guide<a class="headerlink" href="#guide">¶</a></h1><p>The guide of the lighthouse keepers.</p>
    <section id="lamps"><h2>Lamps<a class="headerlink" href="#lamps" title="Link to this heading">¶</a></h2>
    <p>The lamp is changed every ninety days by the senior keeper.</p>
    <h3>Spare lamps</h3><p>Spare lamps are kept in the brass chest of the lamp room.</p></section>
    <h2><a id="fog-horn"></a>The <code>fog</code> horn <a class="anchor" href="#fog-horn">#</a></h2>
    <p>The fog horn sounds twice a minute in fog.</p>
    <h2 id="see-also">See <a href="#lamps">lamps</a></h2><p>The lamp room is at the top of the tower.</p>
    </main></body></html>"""
    doc = load_html(html, "guide", "/kb/guide.html", "guide.html")
    assert [(s.heading, s.anchor) for s in doc.sections] == [
        ("", ""), ("Lamps", "lamps"), ("Lamps > Spare lamps", "lamps"), ("The fog horn", "fog-horn"),
        ("See lamps", "see-also")]
    urls = [c.url for c in chunk_document(doc, heading_keys=False)]
    assert urls == ["https://docs.example.org/guide/", "https://docs.example.org/guide/#lamps",
                    "https://docs.example.org/guide/#lamps", "https://docs.example.org/guide/#fog-horn",
                    "https://docs.example.org/guide/#see-also"]


MARKDOWN = """# Keepers' handbook

Welcome to the handbook.

## Changing the `lamp` bulb

Every ninety days.

## Usage

The first usage section.

### Usage

A second one, nested.

## Café & Tea (v2.0)!

Tea is served at four.

## نگهداری فانوس

فانوس هر هفته تمیز می‌شود.
"""


def test_markdown_sections_carry_the_slugs_a_git_forge_gives_their_headings() -> None:
    doc = load_markdown(MARKDOWN, "handbook.md", "/kb/handbook.md", "handbook.md")
    assert [(s.heading, s.anchor) for s in doc.sections] == [
        ("", ""), ("Changing the `lamp` bulb", "changing-the-lamp-bulb"), ("Usage", "usage"),
        ("Usage > Usage", "usage-1"), ("Café & Tea (v2.0)!", "café--tea-v20"), ("نگهداری فانوس", "نگهداری-فانوس")]
    assert all(c.url == "" for c in chunk_document(doc))  # a local file has no URL to link to
    doc.url = "https://git.example.com/guild/handbook/blob/abc/handbook.md"
    urls = {c.heading: c.url for c in chunk_document(doc, heading_keys=False, min_chars=1)}
    assert urls["Changing the `lamp` bulb"] == doc.url + "#changing-the-lamp-bulb"
    assert urls["Usage > Usage"] == doc.url + "#usage-1"
    assert urls["Café & Tea (v2.0)!"] == doc.url + "#caf%C3%A9--tea-v20"
    assert urls["نگهداری فانوس"].startswith(doc.url + "#%D9%86")


def test_a_wiki_page_is_cited_at_its_page_alone() -> None:
    """Notion and Confluence link a heading by a block id or the page title, not its words."""
    doc = to_document(MARKDOWN.encode(), "page.md", "wiki:1", "wiki:1", "https://wiki.example.org/p/1", anchors=False)
    assert isinstance(doc, Document) and {c.url for c in chunk_document(doc)} == {"https://wiki.example.org/p/1"}


def test_a_section_url_keeps_a_fragment_the_page_url_already_has() -> None:
    assert section_url("https://x.example/p#top", "lamps") == "https://x.example/p#top"
    assert section_url("", "lamps") == ""
    assert section_url("https://x.example/p", "") == "https://x.example/p"
    assert section_url("https://x.example/p", "a b") == "https://x.example/p#a%20b"


def test_a_section_anchor_changes_the_content_hash_only_where_the_page_has_a_url() -> None:
    plain = Document("d", "/kb/d.md", "D", sections=[Section("H", "text")])
    anchored = Document("d", "/kb/d.md", "D", sections=[Section("H", "text", "h")])
    assert plain.content_hash() == anchored.content_hash()
    plain.url = anchored.url = "https://x.example/d"
    assert plain.content_hash() != anchored.content_hash()
