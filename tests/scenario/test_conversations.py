"""Conversations on groundbot's own docs through the real pipeline: a follow-up is answered as
the user means it (read with the earlier words it needs; the user is told what it followed on
from, never shown a bag of words as a question), a short question with several readings is
asked back with its readings offered, and a follow-up with nothing before it is asked as typed."""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any

import pytest

from adapters.console import ConsoleChat
from core import reasons
from core.messages import ConversationKey, Decision, Incoming


def ask(app: Any, chat: str, text: str) -> Decision:
    return app.ask(Incoming(ConversationKey("console", chat), "u1", text))


@pytest.mark.parametrize(("first", "follow_up", "needs", "section"), [
    ("How do I create a Telegram bot with BotFather?", "Where do I put its token?", "telegram",
     "Where does the Telegram bot token go?"),
    ("How do I ingest documents?", "And how do I re-ingest them?", "document", "How do I re-ingest documents?"),
])
def test_a_follow_up_is_read_with_the_earlier_words_it_needs_and_answered_from_the_section_it_means(
        make_app: Callable[..., Any], first: str, follow_up: str, needs: str, section: str) -> None:
    app = make_app()
    before = ask(app, "c", first)
    after = ask(app, "c", follow_up)
    assert not before.refused and not after.refused
    r = after.resolution
    assert r is not None and after.question == follow_up and r.follow_up and r.method == "terms" and r.previous == first
    assert any(needs in t.lower() for t in r.terms) and r.resolved.startswith(follow_up)
    assert after.resolved_question == ""  # selected words are never shown as the question answered
    headings = [s.heading or s.title for s in after.sources]
    assert section in headings[0]
    recorded = app.store.turns()[-1]
    assert recorded.question == follow_up and recorded.record["resolution"]["terms"] == list(r.terms)


def test_a_later_question_that_names_its_own_topic_is_read_as_typed(make_app: Callable[..., Any]) -> None:
    app = make_app()
    ask(app, "new", "How do I run the Slack bot in Socket Mode?")
    d = ask(app, "new", "Which languages does groundbot support?")
    assert not d.refused and d.resolved_question == "" and "language" in (d.sources[0].heading or "").lower()


@pytest.mark.parametrize(("question", "readings"), [
    ("Where does the token go?", {"Where does the Telegram bot token go?", "Where do the Slack tokens and the signing secret go?"}),
    ("What does an answer look like?", {"What does a Telegram answer look like?", "What does a Slack answer look like?"}),
    # which two of the four ways to run a bot (Slack: Socket Mode, HTTP; Telegram: polling, webhook)
    # the search brings up first moves with the docs around them; each offered one is such a way
    ("How do I run the bot?", set()),
])
def test_a_question_with_several_readings_is_asked_back_with_each_reading_answerable(
        make_app: Callable[..., Any], question: str, readings: set[str]) -> None:
    app = make_app()
    d = ask(app, "amb", question)
    offered = {s.text for s in d.suggestions}
    assert d.refused and d.refusal_reason == reasons.AMBIGUOUS_QUESTION and readings <= offered
    if not readings:
        assert len(offered) >= 2 and all(t.startswith(("How do I run the Slack bot", "How do I run the Telegram bot"))
                                         for t in offered), offered
    assert d.refusal_message == "Your question can be read in more than one way. Which one do you mean?"
    for text in offered:
        picked = app.ask(Incoming(ConversationKey("console", "amb"), "u1", "", suggestion_id=next(
            s.id for s in d.suggestions if s.text == text)))
        assert not picked.refused and picked.question == text


def test_a_follow_up_with_no_earlier_turn_is_asked_as_typed(make_app: Callable[..., Any]) -> None:
    app = make_app()
    d = ask(app, "new", "And over HTTP?")
    assert d.resolution.method == "none" and d.resolved_question == "" and app.store.turns()[-1].question == "And over HTTP?"
    assert d.retrieval_query == "And over HTTP?" and not d.resolution.terms


def test_the_console_says_what_a_follow_up_followed_on_from_and_why_shows_the_reading(
        make_app: Callable[..., Any]) -> None:
    app = make_app()
    out = io.StringIO()
    lines = ["How do I ingest documents?", "And how do I re-ingest them?", "/why", "/quit"]
    ConsoleChat(app, user_id="u1", stdin=io.StringIO("\n".join(lines) + "\n"), stdout=out).run()
    text = out.getvalue()
    assert "(Following on from: How do I ingest documents?)" in text and "(Answering:" not in text
    assert "read as: And how do I re-ingest them? " in text and "(terms: with " in text


def test_a_refused_question_after_an_answer_does_not_say_it_followed_on(make_app: Callable[..., Any]) -> None:
    """A question that changes the topic is refused without a line claiming it followed on from
    the turn before; `/why` still shows how it was read."""
    app = make_app()
    out = io.StringIO()
    lines = ["How do I ingest documents?", "what is the capital of france?", "/why", "/quit"]
    ConsoleChat(app, user_id="u1", stdin=io.StringIO("\n".join(lines) + "\n"), stdout=out).run()
    last = app.store.turns()[-1]
    assert last.question == "what is the capital of france?" and last.refused
    text = out.getvalue()
    assert "Following on from" not in text and "(Answering:" not in text
    assert "read as: what is the capital of france?" in text


def test_an_unnamed_thing_is_asked_back_with_each_named_one_answerable(make_app: Callable[..., Any],
                                                                       tmp_path: Any) -> None:
    kb = tmp_path / "libraries"
    kb.mkdir()
    for name, rooms in (("Folsom Public Library", "a maker space with 3D printers, a quiet reading room and "
                                                   "six study rooms that can be booked for two hours"),
                        ("Elk Grove Public Library", "a children's story corner, a seed library for gardeners "
                                                     "and a computer lab with free printing")):
        (kb / f"{name.split()[0].lower()}.md").write_text(
            f"# {name}\n\n## Facilities\n\nThe {name} provides {rooms} for the public. Membership cards are "
            "free for every resident of the county and can be renewed at the front desk.\n", encoding="utf-8")
    app = make_app(empty=True, paths__kb_paths=(str(kb),))
    app.ingest([kb])
    ask(app, "lib", "Are membership cards free for residents of the county?")
    d = ask(app, "lib", "What facilities does this library provide for the public?")
    assert d.refused and d.refusal_reason == reasons.AMBIGUOUS_QUESTION
    offered = {s.text for s in d.suggestions}
    assert offered == {"What facilities does Folsom Public Library provide for the public?",
                       "What facilities does Elk Grove Public Library provide for the public?"}
    for s in d.suggestions:
        picked = app.ask(Incoming(ConversationKey("console", "lib"), "u1", "", suggestion_id=s.id))
        assert not picked.refused and picked.question == s.text
