"""Sentence splitting on real documentation text: a sentence ends at a full stop, question mark or
exclamation mark before a space (or where two sentences were glued together), never inside a
dotted name, a call, an inline code span or a URL."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from core.text.sentences import split_claims, split_sentences

SITES = Path(__file__).resolve().parents[3] / "shared" / "sites"


@pytest.mark.parametrize("text", [
    # the sentence of the issue that became three claims
    "If you are coming from Requests, httpx.Client() is what you can use instead of requests.Session().",
    # Starlette's docs (templates, requests, websockets, testclient pages)
    "Starlette also accepts a preconfigured jinja2.Environment instance.",
    "File upload items are represented as instances of starlette.datastructures.UploadFile.",
    "When starlette.websockets.WebSocketDisconnect is raised, the iterator will exit.",
    "The StaticFiles constructor now allows pathlib.Path in addition to strings for its directory argument.",
    "Using BaseHTTPMiddleware will prevent changes to contextvars.ContextVars from propagating upwards.",
    # MkDocs' release notes
    "This approach is now soft-deprecated, and instead you should specify the config in a sub-class of base.Config.",
    "As a related tip: you should also stop using os.path.* or pathlib.Path() to deal with these paths.",
    # ts-node's docs: file names, package paths and versions
    "Use ts-node/esm with node 12.20.0 or newer, configured in tsconfig.json.",
])
def test_one_sentence_stays_one_whatever_dotted_names_it_holds(text: str) -> None:
    assert split_sentences(text) == [text]
    assert len(split_claims(f"{text} [C1]")) == 1


@pytest.mark.parametrize(("text", "expected"), [
    ("Use `a.b` here, e.g. when version 1.2.3 is installed. Then run mkdocs.yml checks.",
     ["Use `a.b` here, e.g. when version 1.2.3 is installed.", "Then run mkdocs.yml checks."]),
    ("Call `app.run(). Then` in a script. It starts the server.",
     ["Call `app.run(). Then` in a script.", "It starts the server."]),
    ("See https://www.starlette.io/a. B/c for more. Next.", ["See https://www.starlette.io/a. B/c for more.", "Next."]),
    ("See https://www.mkdocs.org/user-guide/. It lists the settings.",
     ["See https://www.mkdocs.org/user-guide/.", "It lists the settings."]),
    ("Env vars are read by config.Config(\".env\"). The file is optional.",
     ["Env vars are read by config.Config(\".env\").", "The file is optional."]),
])
def test_sentences_end_outside_code_spans_and_urls(text: str, expected: list[str]) -> None:
    assert split_sentences(text) == expected


@pytest.mark.parametrize(("text", "expected"), [
    ("It was founded in 1990.The city grew.", ["It was founded in 1990.", "The city grew."]),
    ("It rained (see below).Then it stopped.", ["It rained (see below).", "Then it stopped."]),
    ("Is it ready?Yes it is.", ["Is it ready?", "Yes it is."]),
    ("He said \"stop\".Then he left.", ["He said \"stop\".", "Then he left."]),
])
def test_sentences_glued_without_a_space_are_still_two(text: str, expected: list[str]) -> None:
    assert split_sentences(text) == expected


def test_abbreviations_numbers_and_paragraphs_split_as_before() -> None:
    assert split_sentences("Use a proxy, e.g. Squid. No. 5 is the port. No. It is not.") == [
        "Use a proxy, e.g. Squid.", "No. 5 is the port.", "No.", "It is not."]
    assert split_sentences("First line\nwrapped here.\n\n- a bullet. Two.") == [
        "First line wrapped here.", "a bullet.", "Two."]
    assert split_sentences("این یک جمله است. این جمله دوم است؟ بله.") == [
        "این یک جمله است.", "این جمله دوم است؟", "بله."]


def _site_paragraphs(site: str) -> list[str]:
    from storage.ingestion.loaders import load_html

    folder = SITES / site
    if not folder.is_dir():
        pytest.skip(f"{folder} is not here (the shared folder beside the repository)")
    out: list[str] = []
    for page in sorted(folder.rglob("index.html")):
        doc = load_html(page.read_text(encoding="utf-8"), "page", str(page), "page.html")
        for section in doc.sections:
            out.extend(" ".join(p.split()) for p in re.split(r"\n\s*\n", section.text) if p.strip())
    return out


_DOTTED_CUT = re.compile(r"[^\W\d_][\w]*\.$")


@pytest.mark.parametrize("site", ["starlette-docs", "mkdocs-docs", "ts-node-docs"])
def test_no_sentence_of_a_real_docs_site_is_cut_inside_a_dotted_name(site: str) -> None:
    """Every paragraph of the site's pages: two sentences that touch with no space between them
    were cut inside a token; only a number, a bracket, a quote, "?" or "!" may end such a sentence.
    The rule was written on the issue's example and Starlette's pages; MkDocs (MkDocs theme) and
    ts-node (Docusaurus) were not looked at before this test ran on them."""
    paragraphs = _site_paragraphs(site)
    assert len(paragraphs) > 200
    cut: list[tuple[str, str]] = []
    for para in paragraphs:
        sentences = split_sentences(para)
        at = 0
        for a, b in zip(sentences, sentences[1:], strict=False):
            start = para.find(a, at)
            end = start + len(a)
            at = end
            if start >= 0 and para.startswith(b, end) and _DOTTED_CUT.search(a):
                cut.append((a[-40:], b[:40]))
    assert cut == []
