"""Real-world files ingest into the right text: a latin-1 text file, setext Markdown with front
matter and an HTML block, a saved news page with navigation, cookie banner and footer, and the
broken kinds (binary, undecodable, empty)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from storage.ingestion.loaders import LoadError, load_file

NEWS = """<!doctype html><html><head><title>City opens new library | Daily Planet</title>
<link rel="canonical" href="https://example.org/news/library"></head><body>
<div class="cookie-banner">We use cookies to improve your experience. Accept all cookies?</div>
<header><nav><a href="/">Home</a> <a href="/sports">Sports</a> <a href="/weather">Weather</a></nav></header>
<main><article><h1>City opens new library</h1>
<p>The city opened its new central library on Monday after three years of construction.
The building has five floors and holds 400,000 books.</p>
<h2>Opening hours</h2>
<p>The library is open from 8 am to 8 pm on weekdays and from 10 am to 4 pm on Saturdays.</p>
<h2>Membership</h2><p>Membership is free for residents. Bring a photo ID to the front desk.</p>
</article></main><aside>Most read: Ten things to do this weekend</aside>
<footer>© 2026 Daily Planet. All rights reserved. Privacy policy. Contact us.</footer></body></html>"""

SETEXT = """---
title: Café handbook
owner: ops
---
Opening the café
================

Unlock the door at 7:00 and switch on the espresso machine.

Closing
-------

<div class="note"><b>Note:</b> the till is counted by two people.</div>

Wipe the counters and lock the door at 19:00.

```
# not a heading: a comment in a shell snippet
```
"""


def test_latin1_text_is_decoded_as_latin1(tmp_path: Path) -> None:
    path = tmp_path / "menu.txt"
    path.write_bytes("Café crème and crêpes, served à la carte for 4,50 €uros. Déjà vu, naïve façade.".encode("cp1252"))
    doc = load_file(path, "kb/menu.txt")
    assert "Café crème and crêpes" in doc.sections[0].text and "naïve façade" in doc.sections[0].text


def test_setext_markdown_with_front_matter_and_html_block(tmp_path: Path) -> None:
    path = tmp_path / "handbook.md"
    path.write_text(SETEXT, encoding="utf-8")
    doc = load_file(path, "kb/handbook.md")
    assert doc.title == "Café handbook"
    headings = [s.heading for s in doc.sections]
    assert headings == ["Opening the café", "Opening the café > Closing"]
    closing = doc.sections[1].text
    assert "Note: the till is counted by two people." in closing and "<div" not in closing
    assert "# not a heading" in closing  # code stays code
    assert "owner: ops" not in " ".join(s.text for s in doc.sections)


def test_saved_news_page_keeps_the_article_only(tmp_path: Path) -> None:
    path = tmp_path / "library.html"
    path.write_text(NEWS, encoding="utf-8")
    doc = load_file(path, "kb/library.html")
    text = " ".join(s.text for s in doc.sections)
    assert doc.title == "City opens new library" and doc.url == "https://example.org/news/library"
    assert "400,000 books" in text and "8 am to 8 pm" in text
    for chrome in ("cookies", "Sports", "Weather", "Most read", "All rights reserved", "Privacy policy"):
        assert chrome not in text, chrome
    assert [s.heading for s in doc.sections][-2:] == ["Opening hours", "Membership"]


@pytest.mark.parametrize(("name", "data"), [("blob.txt", b"\x00\x01\x02binary\x00" * 50),
                                            ("empty.md", b"")])
def test_broken_files_fail_clearly_or_load_empty(tmp_path: Path, name: str, data: bytes) -> None:
    path = tmp_path / name
    path.write_bytes(data)
    if b"\x00" in data:
        with pytest.raises(LoadError, match="binary"):
            load_file(path, f"kb/{name}")
    else:
        assert load_file(path, f"kb/{name}").sections == []


def test_news_page_is_answerable_and_its_footer_is_not(make_app: Callable[..., Any], tmp_path: Path) -> None:
    from core.messages import ConversationKey, Incoming

    kb = tmp_path / "site"
    kb.mkdir()
    (kb / "library.html").write_text(NEWS, encoding="utf-8")
    app = make_app(empty=True, paths__kb_paths=(str(kb),))
    app.ingest([kb])
    d = app.ask(Incoming(ConversationKey("t", "news"), "u", "When is the new library open on Saturdays?"))
    assert not d.refused and "10 am to 4 pm" in d.answer
    chunks = [h.text for h in app.index.search("privacy policy cookies", app.embedder.embed_queries(["privacy policy cookies"])[0], 10)]
    assert not any("cookies" in c or "Privacy policy" in c for c in chunks)
