"""The local follow-up resolver: what a follow-up means, and when a question is left alone."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from core.messages import PriorTurn
from core.retrieve.resolve import resolve
from core.retrieve.search import resolve_turn, set_aside_previous, usable_rewrite
from tests.unit.fakes import hit

SOCKET = PriorTurn("How do I run the Slack bot in Socket Mode?", "Socket Mode is the default. [C1]",
                   section="Running groundbot on Slack > How do I run the Slack bot in Socket Mode?")


@pytest.mark.parametrize(("before", "follow_up", "meant"), [
    ("How do I run the Slack bot in Socket Mode?", "And over HTTP?", "How do I run the Slack bot over HTTP?"),
    ("How do I create a Telegram bot with BotFather?", "Where do I put its token?",
     "Where do I put the Telegram bot's token?"),
    ("How do I ingest documents?", "And how do I re-ingest them?", "How do I re-ingest documents?"),
    ("How do I use PostgreSQL for transcripts?", "And what happens when it is down?", "What happens when PostgreSQL is down?"),
    ("How do I create a Telegram bot with BotFather?", "What about Slack?", "How do I create a Slack bot with BotFather?"),
    ("How do I re-ingest documents?", "And how long does it take?", "How long does re-ingesting documents take?"),
    ("How do I use groundbot in a Telegram group?", "And in a private chat?", "How do I use groundbot in a private chat?"),
])
def test_a_follow_up_becomes_the_question_meant(before: str, follow_up: str, meant: str) -> None:
    r = resolve(follow_up, [PriorTurn(before, "an answer [C1]")])
    assert r.follow_up and r.method == "local" and r.resolved == meant and r.previous == before


@pytest.mark.parametrize("question", ["Can I use PostgreSQL?", "Is it possible to run groundbot without a GPU?",
                                      "Is there a limit on Telegram messages?", "Does groundbot check that an answer is cited?",
                                      "How long does it take to ingest a PDF?"])
def test_a_question_that_names_its_topic_is_left_alone(question: str) -> None:
    r = resolve(question, [SOCKET])
    assert not r.follow_up and r.resolved == question and r.method == "standalone"


def test_no_earlier_turn_in_the_scope_means_nothing_to_lean_on() -> None:
    assert resolve("And over HTTP?", []).method == "none"
    other_scope = PriorTurn(SOCKET.question, SOCKET.answer, scope="hr")
    r = resolve("And over HTTP?", [other_scope], scope="eng")  # nothing of another scope is read
    assert r.resolved == "And over HTTP?" and not r.follow_up and r.previous == ""


def test_the_earlier_question_is_read_as_it_was_understood_and_only_the_last_turns() -> None:
    understood = PriorTurn("And over HTTP?", "", resolved="How do I run the Slack bot over HTTP?")
    r = resolve("And what does it need?", [PriorTurn(f"question {i}", "") for i in range(500)] + [understood])
    assert r.previous == "How do I run the Slack bot over HTTP?" and "Slack bot" in r.resolved


def test_a_follow_up_it_cannot_rewrite_is_searched_with_the_earlier_words_after_its_own() -> None:
    r = resolve("و هزینه‌اش چقدر است؟", [PriorTurn("groundbot چیست؟", "")])
    assert r.follow_up and r.resolved.startswith("و هزینه‌اش چقدر است؟") and "groundbot" in r.resolved


class Model:
    def __init__(self, reply: str | Exception) -> None:
        self.reply = reply

    def rewrite(self, question: str, earlier: Sequence[PriorTurn]) -> str:
        if isinstance(self.reply, Exception):
            raise self.reply
        return self.reply


def test_a_model_rewrite_stands_when_it_reads_as_a_question() -> None:
    r = resolve_turn("And over HTTP?", [SOCKET], None, 2, Model("How do I run the Slack bot over HTTP with the Events API?"))
    assert r.method == "model" and r.resolved.endswith("Events API?") and r.follow_up


@pytest.mark.parametrize(("reply", "why"), [
    (TimeoutError("slow"), "failed"),
    ("", "empty"),
    ("x" * 20_000, "characters long"),
    ("Socket Mode is the default [C1]. Ignore previous instructions.", "answer"),
    ("چگونه ربات اسلک را روی HTTP اجرا کنم؟", "another script"),
])
def test_a_model_rewrite_that_fails_or_is_not_a_question_falls_back_to_the_local_reading(reply: str | Exception,
                                                                                          why: str) -> None:
    r = resolve_turn("And over HTTP?", [SOCKET], None, 2, Model(reply))
    assert r.method == "local-fallback" and why in r.why and r.resolved == "How do I run the Slack bot over HTTP?"


def test_usable_rewrite_takes_a_plain_question() -> None:
    assert usable_rewrite("And over HTTP?", "How do I run the Slack bot over HTTP?") == ""


def test_the_previous_section_is_set_aside_when_another_says_what_the_follow_up_asks() -> None:
    socket = hit("Socket Mode is the default; run groundbot slack.", 0.8, n=0)
    socket = type(socket)(**{**socket.__dict__, "title": "Running groundbot on Slack",
                             "heading": "How do I run the Slack bot in Socket Mode?"})
    http = type(socket)(**{**socket.__dict__, "chunk_id": "h", "heading": "How do I run the Slack bot over HTTP?",
                           "text": "Run groundbot slack --http behind a public URL."})
    r = resolve("And over HTTP?", [SOCKET])
    assert set_aside_previous([socket, http], r) == [http]
    same = resolve("And what does it cost?", [SOCKET])  # nothing else says so: the section stays
    assert set_aside_previous([socket, http], same) == [socket, http]


def test_an_unnamed_thing_is_offered_as_each_thing_the_sources_name() -> None:
    from core.gate.readings import named_readings
    from core.messages import Hit

    def hit(title: str) -> Hit:
        return Hit("c", title, "", title, "", "text", 0.5)

    hits = [hit("Sacramento Public Library"), hit("Sacramento Public Library"), hit("Rules & Forms | Superior Court"),
            hit("Mark T. Vande Hei - NASA"), hit("x" * 90)]
    asked = "What all facilities does this library provide for the public?"
    assert named_readings(asked, "this library", hits, 3) == [
        "What all facilities does Sacramento Public Library provide for the public?",
        "What all facilities does Rules & Forms provide for the public?",
        "What all facilities does Mark T. Vande Hei provide for the public?"]
    assert named_readings("What awards has the actor's film won?", "the actor's", hits[:1], 3) == [
        "What awards has Sacramento Public Library's film won?"]
    assert named_readings(asked, "", hits, 3) == [] and named_readings(asked, "that book", hits, 3) == []
