"""Every section of the bundled docs is found by its own heading: asked exactly as a heading or
FAQ question is written, groundbot answers from that section, and the suggestions a refusal
offers are questions it answers."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from bench.grounding.docs_suite import doc_sections, from_section, led_by_section
from bot.app import App, build_app
from core.messages import ConversationKey, Incoming


@pytest.mark.slow
def test_every_heading_and_faq_question_is_answered_from_its_section(make_app: Callable[..., App]) -> None:
    app = make_app()
    sections = doc_sections()
    assert len(sections) > 60  # the walk covers the docs, not an empty list
    missed = []
    for i, s in enumerate(sections):
        d = app.ask(Incoming(ConversationKey("console", f"heading-{i}"), "local", s.question))
        if not from_section(d, s.file, s.heading):
            cited = [f"{src.source.split('/')[-1]} / {src.heading}" for src in d.sources]
            missed.append(f"{s.file} / {s.heading}: {d.refusal_reason or 'cited ' + '; '.join(cited)}")
    assert not missed, "\n".join(missed)


def test_the_demos_first_question_opens_with_the_section_that_answers_it(make_app: Callable[..., App]) -> None:
    """The reader's order decides what is quoted first: it reads the ingest section as answering
    surer than the scopes page's "How do I give #hr its own documents?", which retrieval places
    nearer the question."""
    app = make_app()
    d = app.ask(Incoming(ConversationKey("console", "demo"), "local", "How do I add a new document to the knowledge base?"))
    assert led_by_section(d, "ingesting.md", "How do I ingest documents?"), (d.answer, [s.heading for s in d.sources])
    assert d.answer.startswith("To add documents to the knowledge base")


def test_a_refusal_offers_only_questions_that_are_answered(make_app: Callable[..., App]) -> None:
    app = make_app()
    offered: set[str] = set()
    for i, q in enumerate(["Does groundbot support Microsoft Teams?", "How do I translate the docs into French?",
                           "Can groundbot read my Outlook calendar?"]):
        d = app.ask(Incoming(ConversationKey("console", f"off-{i}"), "local", q))
        assert d.refused and q not in [s.text for s in d.suggestions]
        offered.update(s.text for s in d.suggestions)
    assert offered, "no suggestion was offered to compare"
    for i, s in enumerate(sorted(offered)):
        d = app.ask(Incoming(ConversationKey("console", f"pick-{i}"), "local", s))
        assert not d.refused, (s, d.refusal_reason)


@pytest.mark.slow
def test_the_index_lists_its_suggestions_to_check_them_ahead(make_app: Callable[..., App]) -> None:
    app = make_app()
    texts = app.index.suggestion_texts(1000)
    headings = {a.question for a in doc_sections()}
    assert "How do I tune the thresholds?" in texts and set(texts) <= headings  # headings and FAQ questions
    assert len(app.index.suggestion_texts(5)) == 5
    assert app.pipeline.check_suggestions(1000) == len(texts)


@pytest.mark.slow
def test_suggestion_verdicts_decided_once_are_read_by_another_app_on_the_index(make_app: Callable[..., App],
                                                                               embedder: Any) -> None:
    first = make_app()
    checked = first.pipeline.check_suggestions(1000)
    decided = first.pipeline.offers._dry_runs  # by running each one's stages (a text written twice counts once)
    assert checked > 60 and decided == len(first.pipeline.offers._answered_cache) > 60
    second = build_app(first.config, embedder=embedder)  # another worker on the same LanceDB index
    assert second.pipeline.check_suggestions(1000) == checked
    assert second.pipeline.offers._dry_runs == 0  # every verdict read from the index
    assert second.pipeline.offers._answered_cache == first.pipeline.offers._answered_cache
    assert sum(second.pipeline.offers._answered_cache.values()) > 60  # the headings are answered
