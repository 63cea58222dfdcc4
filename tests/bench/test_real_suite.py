"""The pure parts of bench.grounding's real suite: a project's question file (malformed rows named),
its docs as a KB folder (a built site or Markdown sources), the page a cited chunk is from, and the
scoring of a reply by the pages it cites. No model runs here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.grounding import real
from bench.grounding.report import headline
from bench.grounding.run import DEFAULT_LIMITS, SUITES, parse_args
from tests.bench.test_loose_suite import decision


def _write(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_a_question_file_is_read_and_a_malformed_row_is_named(tmp_path: Path) -> None:
    good = _write(tmp_path / "proj.jsonl", [
        {"question": "How do I mount a static folder?", "gold_pages": ["staticfiles/"], "kind": "answerable", "source": "x#1"},
        {"question": "Does it run on Windows 95?", "gold_pages": [], "kind": "not_in_docs", "source": "x#2"},
        {"question": "Where is the home page?", "gold_pages": [""], "kind": "answerable", "source": "x#3"},
    ])
    qs = real.load_project(good)
    assert [q.answerable for q in qs] == [True, False, True]
    assert qs[0].gold_pages == ("staticfiles",) and qs[2].gold_pages == (real.HOME,) and qs[0].project == "proj"
    assert qs[0].split == "test" and real.RealQuestion("starlette", "q", True, ("a",), (), "", "").split == "dev"
    assert real.RealQuestion("mkdocs", "q", True, ("a",), (), "", "").split == "train"
    for bad, said in (({"question": "", "gold_pages": [], "kind": "not_in_docs"}, "no question"),
                      ({"question": "q?", "gold_pages": [], "kind": "maybe"}, "kind must be"),
                      ({"question": "q?", "gold_pages": [], "kind": "answerable"}, "gold pages"),
                      ({"question": "q?", "gold_pages": ["a"], "kind": "not_in_docs"}, "gold pages")):
        with pytest.raises(ValueError, match=said):
            real.load_project(_write(tmp_path / "bad.jsonl", [bad]))


def test_markdown_docs_become_a_kb_folder_and_cited_chunks_name_their_page(tmp_path: Path) -> None:
    docs = tmp_path / "proj-docs"
    (docs / "guide").mkdir(parents=True)
    (docs / "index.md").write_text("# Home\n\nWelcome.\n", encoding="utf-8")
    (docs / "guide" / "cli.mdx").write_text("# CLI\n\nRun it.\n", encoding="utf-8")
    (docs / "logo.png").write_bytes(b"\x89PNG")
    kb = tmp_path / "kb" / "proj-docs"
    assert sorted(real.write_kb(docs, kb)) == ["guide/cli", "index"]
    assert (kb / "guide" / "cli.md").is_file() and not (kb / "logo.png").exists()
    assert real.page_of("proj-docs/guide/cli.md", "proj-docs") == "guide/cli"
    assert real.page_of("site-docs/routing/index.html", "site-docs") == "routing"
    assert real.page_of("site-docs/index.html", "site-docs") == real.HOME
    assert real.page_of("other/routing/index.html", "site-docs") == ""


def test_a_reply_is_right_when_it_cites_a_gold_page_and_a_not_in_docs_question_when_refused() -> None:
    q = real.RealQuestion("proj", "How do I mount a static folder?", True, ("staticfiles",), ("StaticFiles",), "", "")
    cited = decision(sources=(("proj-docs/routing.md", "Mount"), ("proj-docs/staticfiles.md", "StaticFiles")))
    got = real.score(cited, q, "proj-docs")
    assert got["right"] and not got["led"] and got["cited"] == ["routing", "staticfiles"] and not got["section"]
    assert not real.score(decision(refused=True), q, "proj-docs")["right"]
    led = decision(sources=(("proj-docs/staticfiles.md", "Static files > StaticFiles\u00b6"),))
    assert real.score(led, q, "proj-docs")["section"]
    out = real.RealQuestion("proj", "Does it run on Windows 95?", False, (), (), "", "")
    assert real.score(decision(refused=True), out, "proj-docs")["right"]
    assert not real.score(cited, out, "proj-docs")["right"]


def test_the_suite_is_a_suite_of_the_command_with_its_result_file_and_headline() -> None:
    assert "real" in SUITES and DEFAULT_LIMITS["real"] is None
    assert parse_args(["--suites", "real"]).out.name == "grounding-real.json"
    figures = headline({"real": {"starlette_answered_from_gold": 0.5, "starlette_answered_from_gold_n": 35,
                                 "test_not_in_docs_refused": 0.3, "seconds": 9.0}})
    assert figures == {"real.starlette_answered_from_gold": 0.5, "real.test_not_in_docs_refused": 0.3}


def test_projects_are_those_whose_questions_and_docs_are_both_there_dev_first(tmp_path: Path) -> None:
    qdir, sites = tmp_path / "q", tmp_path / "s"
    qdir.mkdir()
    for name in ("alpha", "starlette", "orphan"):
        (qdir / f"{name}.jsonl").write_text("", encoding="utf-8")
    for name in ("alpha", "starlette"):
        (sites / f"{name}-docs").mkdir(parents=True)
    assert [p for p, _ in real.projects(qdir, sites)] == ["starlette", "alpha"]


def test_a_gold_section_holds_its_subsections_and_a_title_section_the_intro() -> None:
    from bench.real_sets import in_section

    assert in_section("Configuration > use_directory_urls\uf0c1", "Config", "use_directory_urls")
    assert in_section("Options > `--reload`", "Settings", "Options")
    assert not in_section("Options2 > x", "Settings", "Options")
    assert in_section("", "Logging", "Logging") and not in_section("", "Logging", "Handlers")


def test_a_heading_holding_the_page_separator_stays_whole(tmp_path: Path) -> None:
    from bench.real_sets import load_rows

    rows = load_rows(_write(tmp_path / "p.jsonl", [
        {"question": "q?", "gold_pages": ["a"], "gold_section": "Query parameter list / multiple values", "kind": "answerable"},
        {"question": "r?", "gold_pages": ["a", "b"], "gold_section": "One / Two", "kind": "answerable"}]))
    assert rows[0].gold_sections == ("Query parameter list / multiple values",)
    assert rows[1].gold_sections == ("One", "Two")


def test_the_curve_counts_answers_at_each_threshold() -> None:
    from bench.grounding.harness import Row

    q = real.RealQuestion("proj", "How do I mount a static folder?", True, ("staticfiles",), ("StaticFiles",), "", "")
    sure = decision(sources=(("proj-docs/staticfiles.md", "StaticFiles"),))
    sure.scores["reader_best"] = 0.9
    unsure = decision(sources=(("proj-docs/routing.md", "Mount"),))
    unsure.scores["reader_best"] = 0.5
    nid = real.RealQuestion("proj", "Windows 95?", False, (), (), "", "")
    rows = [Row("real", "a", 0, q.ask, "reply", sure, extra=real.score(sure, q, "proj-docs")),
            Row("real", "a", 1, q.ask, "reply", unsure, extra=real.score(unsure, q, "proj-docs")),
            Row("real", "n", 2, nid.ask, "refuse", unsure, extra=real.score(unsure, nid, "proj-docs"))]
    points = {p["threshold"]: p for p in real.curve(rows)}
    assert points[0.4]["answered_from_gold_section"] == 1 and points[0.4]["not_in_docs_answered"] == 1
    assert points[0.6]["not_in_docs_answered"] == 0 and points[0.6]["precision_section"] == 1.0
    assert points[0.95]["answered_from_gold_section"] == 0
