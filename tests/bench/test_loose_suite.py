"""The pure parts of bench.grounding's loose suite: its two question files (every section and page
they name exists, their split is the one written down), the site's KB folder, and the scoring of
a reply by the page it cites. No model runs here."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench.grounding import loose
from bench.grounding.conversations import load_docs_conversations
from bench.grounding.docs_suite import DOCS, _leaf, doc_sections
from bench.grounding.report import HEADLINE, result_name
from bench.grounding.run import DEFAULT_LIMITS, SUITES, parse_args
from core.messages import Decision, Source
from storage.ingestion.loaders import load_file

ISSUE_FIRST = 3  # the conversations built on the issue's examples, first in the file and dev
needs_site = pytest.mark.skipif(not (loose.STARLETTE_SITE / "sitemap.xml").is_file(),
                                reason="../shared/sites/starlette-docs is not there")


def decision(*, refused: bool = False, sources: tuple[tuple[str, str], ...] = ()) -> Decision:
    """A decision record citing (doc_id, heading) sources, as the pipeline writes one."""
    return Decision(
        question="q", normalized_question="q", retrieval_query="q", answer="" if refused else "An answer.",
        refused=refused, refusal_reason="NOT_ANSWERED_BY_SOURCES" if refused else "", refusal_message="",
        explanation="", status="REFUSE" if refused else "PASS", state="refused" if refused else "replied", reasons=[], checks_passed=[],
        checks_failed=[], scores={}, llm_called=False,
        sources=[Source(i + 1, d, f"c{i}", "Title", h, f"/tmp/{d}", "", 0.5) for i, (d, h) in enumerate(sources)],
        suggestions=[], uncovered_claims=[], latency_ms={}, index_version="1", config_hash="h", language="en")


# -- the docs conversations asked loosely -----------------------------------------------------

def test_the_loose_docs_conversations_name_sections_that_exist_in_the_docs() -> None:
    convs = load_docs_conversations(loose.DOCS_LOOSE)
    assert 28 <= len(convs) <= 35
    sections = {(f, _leaf(a.heading)) for a in doc_sections(DOCS) for f in a.file.split("|")}
    missing = [f"{c.id}: {t.file} / {t.heading}" for c in convs for t in c.turns
               for f in t.file.split("|") if (f, _leaf(t.heading)) not in sections]
    assert not missing, "\n".join(missing)
    later = [t for c in convs for t in c.turns[1:]]
    assert sum(bool(t.follow_up) for t in later) >= 45 and sum(not t.follow_up for t in later) >= 4
    same = [t for c in convs for a, t in zip(c.turns, c.turns[1:], strict=False) if t.follow_up and t.same_section(a)]
    assert len(same) >= 5  # follow-ups that mean the section of the turn before


def test_the_loose_docs_conversations_are_not_the_docs_words() -> None:
    """Asked loosely: no turn is a heading as written, none repeats a turn of the docs-words file."""
    convs = load_docs_conversations(loose.DOCS_LOOSE)
    headings = {a.heading.lower().strip() for a in doc_sections(DOCS)}
    words = {t.ask.lower().strip() for c in load_docs_conversations() for t in c.turns}
    asks = [t.ask.lower().strip() for c in convs for t in c.turns]
    assert not [a for a in asks if a in headings or a in words]
    assert sum(a == a.lower() for a in (t.ask for c in convs for t in c.turns)) >= len(asks) // 2
    assert sum(not a.endswith("?") for a in asks) >= 10


def test_the_loose_docs_split_is_the_one_the_file_states() -> None:
    convs = load_docs_conversations(loose.DOCS_LOOSE)
    expected = ["dev"] * ISSUE_FIRST + ["test" if i % 3 == 2 else "dev" for i in range(len(convs) - ISSUE_FIRST)]
    assert [c.split for c in convs] == expected
    assert "MUST NOT BE USED FOR TUNING" in loose.DOCS_LOOSE.read_text("utf-8")


# -- the starlette-docs questions -------------------------------------------------------------

def test_the_site_questions_split_and_counts_are_the_ones_the_file_states() -> None:
    qs = loose.load_site_questions()
    assert [q.split for q in qs] == ["test" if i % 3 == 2 else "dev" for i in range(len(qs))]
    assert 35 <= sum(q.answerable for q in qs) <= 45 and 8 <= sum(not q.answerable for q in qs) <= 12
    assert "MUST NOT BE USED FOR TUNING" in loose.STARLETTE_QUESTIONS.read_text("utf-8")


@needs_site
def test_the_site_questions_name_pages_and_sections_that_exist() -> None:
    pages = loose.site_pages()
    assert len(pages) == 25 and loose.HOME in pages and "routing/" in pages
    qs = loose.load_site_questions()
    unknown = [f"{q.ask}: {q.page}" for q in qs if q.answerable and q.page not in pages]
    assert not unknown, "\n".join(unknown)
    sections: dict[str, set[str]] = {}
    for page in {q.page for q in qs if q.heading}:
        doc = load_file(loose.page_file(loose.STARLETTE_SITE, page), f"{loose.SITE_KB}/x")
        sections[page] = {_leaf(s.heading) for s in doc.sections if s.heading}
    missing = [f"{q.ask}: {q.page} / {q.heading}" for q in qs if q.heading and _leaf(q.heading) not in sections[q.page]]
    assert not missing, "\n".join(missing)


@needs_site
def test_the_site_kb_holds_the_sitemap_pages_only(tmp_path: Path) -> None:
    pages = loose.write_site_kb(loose.STARLETTE_SITE, tmp_path / loose.SITE_KB)
    files = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file())
    assert len(files) == len(pages) == 25
    assert f"{loose.SITE_KB}/index.html" in files and f"{loose.SITE_KB}/routing/index.html" in files
    assert sorted(loose.page_of(f) for f in files) == sorted(pages)


@pytest.mark.parametrize(("entry", "why"), [
    ({"ask": "a", "split": "train", "page": "routing/"}, "split"),
    ({"ask": "a", "split": "dev"}, "names its page"),
    ({"ask": "a", "split": "dev", "answerable": False, "page": "routing/"}, "names no page"),
    ({"ask": "a", "split": "dev", "answerable": "no"}, "true or false"),
    ({"ask": "", "split": "dev", "page": "routing/"}, "no ask"),
])
def test_a_malformed_site_question_is_refused(tmp_path: Path, entry: dict[str, Any], why: str) -> None:
    path = tmp_path / "q.yaml"
    path.write_text(json.dumps({"questions": [entry]}), encoding="utf-8")
    with pytest.raises(ValueError, match=why):
        loose.load_site_questions(path)


# -- scoring a site question ------------------------------------------------------------------

def test_pages_are_read_off_doc_ids_and_sitemap_urls() -> None:
    assert loose.page_of("starlette-docs/routing/index.html") == "routing/"
    assert loose.page_of("starlette-docs/index.html") == loose.HOME
    assert loose.page_of("docs/routing.md") == "" == loose.page_of("starlette-docs/routing/other.html")
    assert loose.page_path("https://www.starlette.io/routing/") == "routing/"
    assert loose.page_path("https://www.starlette.io/") == loose.HOME
    assert loose.page_file(Path("/s"), loose.HOME) == Path("/s/index.html")


PATH_PARAMS = loose.SiteQuestion("route w/ a user id in the path?", "dev", True, "routing/", "Path Parameters")


def test_an_answer_from_the_page_and_section_meant_is_right() -> None:
    d = decision(sources=(("starlette-docs/routing/index.html", "Path Parameters"),))
    s = loose.score_site_question(d, PATH_PARAMS)
    assert s["right"] and s["from_page"] and s["from_section"] and s["led"]


def test_an_answer_from_another_section_of_the_page_is_not_right_where_a_section_is_named() -> None:
    d = decision(sources=(("starlette-docs/requests/index.html", "Request > Path Parameters"),
                          ("starlette-docs/routing/index.html", "Route priority")))
    s = loose.score_site_question(d, PATH_PARAMS)
    assert s["from_page"] and not s["from_section"] and not s["right"] and not s["led"]
    whole_page = loose.SiteQuestion("lifespan?", "dev", True, "routing/")
    assert loose.score_site_question(d, whole_page)["right"]


def test_a_nested_heading_is_matched_by_its_last_part() -> None:
    q = loose.SiteQuestion("query string?", "dev", True, "requests/", "Query Parameters")
    assert loose.score_site_question(decision(sources=(("starlette-docs/requests/index.html",
                                                         "Request > Query Parameters"),)), q)["right"]


def test_refusals_are_right_only_for_questions_the_site_does_not_answer() -> None:
    off = loose.SiteQuestion("redis caching?", "dev", False)
    assert loose.score_site_question(decision(refused=True), off)["right"]
    assert not loose.score_site_question(decision(sources=(("starlette-docs/index.html", ""),)), off)["right"]
    s = loose.score_site_question(decision(refused=True), PATH_PARAMS)
    assert not s["right"] and not s["from_page"] and not s["from_section"]


def test_the_suite_is_registered_with_its_result_file_and_headline() -> None:
    assert "loose" in SUITES and "loose" in DEFAULT_LIMITS and "loose" in HEADLINE
    args = parse_args(["--suites", "loose"])
    assert args.out.name == "grounding-loose.json" == f"{result_name(['loose'], SUITES)}.json"
