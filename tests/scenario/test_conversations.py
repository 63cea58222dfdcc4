"""Conversations on groundbot's own docs through the real pipeline: a follow-up is answered as
the user means it (and says how it was understood), a short question with several readings is
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


@pytest.mark.parametrize(("first", "follow_up", "meant", "section"), [
    ("How do I run the Slack bot in Socket Mode?", "And over HTTP?", "How do I run the Slack bot over HTTP?",
     "How do I run the Slack bot over HTTP with the Events API?"),
    ("How do I create a Telegram bot with BotFather?", "Where do I put its token?",
     "Where do I put the Telegram bot's token?", "Where does the Telegram bot token go?"),
    ("How do I ingest documents?", "And how do I re-ingest them?", "How do I re-ingest documents?",
     "How do I re-ingest documents?"),
])
def test_a_follow_up_is_answered_from_the_section_it_means(make_app: Callable[..., Any], first: str, follow_up: str,
                                                            meant: str, section: str) -> None:
    app = make_app()
    before = ask(app, "c", first)
    after = ask(app, "c", follow_up)
    assert not before.refused and not after.refused
    assert after.question == follow_up and after.resolved_question == meant and after.resolution["follow_up"]
    headings = [s.heading or s.title for s in after.sources]
    assert section in headings[0] and before.sources[0].heading not in headings  # not the previous answer again
    recorded = app.store.turns()[-1]
    assert recorded.question == follow_up and recorded.record["resolved_question"] == meant


def test_a_follow_up_that_asks_something_new_is_not_given_the_previous_answer(make_app: Callable[..., Any]) -> None:
    app = make_app()
    first = ask(app, "pg", "How do I use PostgreSQL for transcripts?")
    after = ask(app, "pg", "And what happens when it is down?")
    assert after.resolved_question == "What happens when PostgreSQL is down?"
    assert first.sources[0].heading not in [s.heading for s in after.sources]


@pytest.mark.parametrize(("question", "readings"), [
    ("Where does the token go?", {"Where does the Telegram bot token go?", "Where do the Slack tokens and the signing secret go?"}),
    ("What does an answer look like?", {"What does a Telegram answer look like?", "What does a Slack answer look like?"}),
    ("How do I run the bot?", {"How do I run the Slack bot in Socket Mode?"}),
])
def test_a_question_with_several_readings_is_asked_back_with_each_reading_answerable(
        make_app: Callable[..., Any], question: str, readings: set[str]) -> None:
    app = make_app()
    d = ask(app, "amb", question)
    offered = {s.text for s in d.suggestions}
    assert d.refused and d.refusal_reason == reasons.AMBIGUOUS_QUESTION and readings <= offered
    assert d.refusal_message == "Your question can be read in more than one way. Which one do you mean?"
    for text in offered:
        picked = app.ask(Incoming(ConversationKey("console", "amb"), "u1", "", suggestion_id=next(
            s.id for s in d.suggestions if s.text == text)))
        assert not picked.refused and picked.question == text


def test_a_follow_up_with_no_earlier_turn_is_asked_as_typed(make_app: Callable[..., Any]) -> None:
    app = make_app()
    d = ask(app, "new", "And over HTTP?")
    assert d.resolution["method"] == "none" and d.resolved_question == "" and app.store.turns()[-1].question == "And over HTTP?"


def test_the_console_says_how_a_follow_up_was_understood_and_why_shows_it(make_app: Callable[..., Any]) -> None:
    app = make_app()
    out = io.StringIO()
    lines = ["How do I run the Slack bot in Socket Mode?", "And over HTTP?", "/why", "/quit"]
    ConsoleChat(app, user_id="u1", stdin=io.StringIO("\n".join(lines) + "\n"), stdout=out).run()
    text = out.getvalue()
    assert "(Answering: How do I run the Slack bot over HTTP?)" in text
    assert "understood as: How do I run the Slack bot over HTTP?  (local: a fragment put in place" in text


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
    app = make_app(empty=True, kb_paths=(str(kb),))
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
