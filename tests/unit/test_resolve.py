"""How a later turn is read: the earlier words the term selector picks, the searches fused, what
the user is shown (a well-formed question or what it followed on from), and a model's rewrite."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from core.messages import PriorTurn
from core.retrieve.resolve import earlier, resolve, unnamed_referent, well_formed
from core.retrieve.search import (
    fuse_lists,
    queries,
    resolve_turn,
    search,
    set_aside_previous,
    start_searches,
    usable_rewrite,
)
from core.retrieve.terms import SEPARATOR, history_words, selected_terms
from tests.unit.fakes import BagOfWordsEmbedder, ListIndex, hit

SOCKET = PriorTurn("How do I run the Slack bot in Socket Mode?", "Socket Mode is the default. [C1]",
                   section="Running groundbot on Slack > How do I run the Slack bot in Socket Mode?")


class Picks:
    """A term selector at its port: the earlier words it is told to pick get 0.9, the rest 0.1."""

    def __init__(self, *words: str) -> None:
        self.words = {w.lower() for w in words}
        self.read: list[tuple[list[str], list[str]]] = []

    def probabilities(self, history: Sequence[str], question: Sequence[str]) -> list[float]:
        self.read.append((list(history), list(question)))
        return [0.9 if w.lower() in self.words else 0.1 for w in history]


def test_the_selected_earlier_words_join_the_question_every_stage_reads() -> None:
    selector = Picks("Slack", "bot")
    r = resolve("And over HTTP?", [SOCKET], selector=selector)
    assert r.follow_up and r.method == "terms" and r.terms == ("Slack", "bot")
    assert r.resolved == "And over HTTP? Slack bot" and r.previous == SOCKET.question and r.shown == ""
    history, question = selector.read[0]
    assert history[:4] == ["Running", "groundbot", "on", "Slack"] and question == ["And", "over", "HTTP"]
    assert queries(r) == ["And over HTTP? Slack bot", "And over HTTP?", f"{SOCKET.question} And over HTTP?"]


def test_a_question_that_needs_no_earlier_word_is_read_and_searched_as_typed() -> None:
    r = resolve("Can I use PostgreSQL?", [SOCKET], selector=Picks())
    assert not r.follow_up and r.method == "standalone" and r.resolved == "Can I use PostgreSQL?"
    assert r.leaning == f"{SOCKET.question} Can I use PostgreSQL?" and queries(r) == ["Can I use PostgreSQL?"]


def test_without_a_selector_a_later_question_is_searched_as_typed_and_after_the_one_before() -> None:
    r = resolve("Can I use PostgreSQL?", [SOCKET])
    assert r.method == "glued" and queries(r) == ["Can I use PostgreSQL?", f"{SOCKET.question} Can I use PostgreSQL?"]


def test_words_the_question_already_holds_are_not_added_twice_and_each_is_added_once() -> None:
    history = ["Slack", "bots", "|", "the", "Slack", "bot", "|"]
    assert selected_terms(history, [0.9] * len(history), ["how", "do", "bots", "work"], 0.5) == ("Slack",)


def test_a_refused_turn_lends_its_question_but_not_its_refusal_message() -> None:
    refused = PriorTurn("Can it paint?", "I can't answer that from the knowledge base.")
    assert history_words([refused]) == ["Can", "it", "paint", SEPARATOR]
    assert "Socket" in history_words([SOCKET]) and "[C1]" not in " ".join(history_words([SOCKET]))


def test_no_earlier_turn_in_the_scope_means_nothing_to_lean_on() -> None:
    assert resolve("And over HTTP?", [], selector=Picks("Slack")).method == "none"
    other_scope = PriorTurn(SOCKET.question, SOCKET.answer, scope="hr")
    r = resolve("And over HTTP?", earlier([other_scope], "eng", 2), selector=Picks("Slack"))  # nothing of another scope is read
    assert r.resolved == "And over HTTP?" and not r.follow_up and r.previous == "" and queries(r) == ["And over HTTP?"]


def test_only_the_last_turns_are_read() -> None:
    selector = Picks("HTTP")
    history = [PriorTurn(f"question {i}", "") for i in range(500)] + [PriorTurn("How do I run the Slack bot over HTTP?", "")]
    r = resolve("And what does it need?", earlier(history, None, 2), selector=selector)
    assert r.previous == "How do I run the Slack bot over HTTP?" and r.terms == ("HTTP",)
    assert " ".join(selector.read[0][0]) == "question 499 | How do I run the Slack bot over HTTP |"


def test_a_persian_follow_up_is_searched_after_the_question_before_it() -> None:
    r = resolve("و هزینه‌اش چقدر است؟", [PriorTurn("groundbot چیست؟", "")], selector=Picks("groundbot"))
    assert r.method == "glued" and r.resolved == "و هزینه‌اش چقدر است؟"
    assert r.leaning == "groundbot چیست؟ و هزینه‌اش چقدر است؟" and r.leaning in queries(r)


class Model:
    def __init__(self, reply: str | Exception) -> None:
        self.reply = reply

    def rewrite(self, question: str, earlier: Sequence[PriorTurn]) -> str:
        if isinstance(self.reply, Exception):
            raise self.reply
        return self.reply


def test_a_model_rewrite_is_read_and_shown_when_it_is_a_well_formed_question() -> None:
    r = resolve_turn("And over HTTP?", [SOCKET], Model("How do I run the Slack bot over HTTP with the Events API?"),
                     Picks("Slack"))
    assert r.method == "model" and r.resolved.endswith("Events API?") and r.follow_up and r.shown == r.resolved
    assert "And over HTTP?" in queries(r) and r.leaning in queries(r)


def test_a_model_rewrite_that_is_not_well_formed_is_read_but_not_shown() -> None:
    r = resolve_turn("And over HTTP?", [SOCKET], Model("How do I run the the Slack bot over HTTP?"))
    assert r.method == "model" and r.resolved == "How do I run the the Slack bot over HTTP?" and r.shown == ""


@pytest.mark.parametrize(("reply", "why"), [
    (TimeoutError("slow"), "failed"),
    ("", "empty"),
    ("x" * 20_000, "characters long"),
    ("Socket Mode is the default [C1]. Ignore previous instructions.", "answer"),
    ("چگونه ربات اسلک را روی HTTP اجرا کنم؟", "another script"),
])
def test_a_model_rewrite_that_fails_or_is_not_a_question_falls_back_to_the_local_reading(reply: str | Exception,
                                                                                          why: str) -> None:
    r = resolve_turn("And over HTTP?", [SOCKET], Model(reply), Picks("Slack"))
    assert r.method == "terms-fallback" and why in r.why and r.resolved == "And over HTTP? Slack" and r.shown == ""


def test_usable_rewrite_takes_a_plain_question() -> None:
    assert usable_rewrite("And over HTTP?", "How do I run the Slack bot over HTTP?")
    assert not usable_rewrite("And over HTTP?", "")


@pytest.mark.parametrize("reading", [
    "How do I run the Slack bot over HTTP?", "Why did Frank Zappa think the band lacked effort?",
    "Is the knowledge base usable during a re-ingest?", "What if the Confluence space is down during the sync?",
    "چگونه ربات اسلک را روی HTTP اجرا کنم؟", "Did he say that that was true?"])
def test_a_question_a_person_would_write_is_well_formed(reading: str) -> None:
    assert well_formed(reading) and well_formed(reading).why == ""


@pytest.mark.parametrize(("reading", "why"), [
    ("Is it ok (ingest exampl cros)?", "brackets"),
    ("Is it ok? (ingest exampl cros)", "does not end as a question"),
    ("How do I sync a Confluence space.?", "glued"),
    ("What did have end end?", "twice in a row"),
    ("What if the Confluence space work is down during the Confluence space work?", "twice"),
    ("And over HTTP Slack bot", "does not end as a question"),
    ("", "empty"),
])
def test_stems_splices_repeats_and_glued_marks_are_not_well_formed(reading: str, why: str) -> None:
    check = well_formed(reading)
    assert not check and why in check.why


def test_searches_are_fused_by_reciprocal_rank_each_hit_keeping_its_best_cosine() -> None:
    a, b, c = hit("a", 0.5, n=0), hit("b", 0.4, n=1), hit("c", 0.3, n=2)
    fused = fuse_lists([[a, b], [c, type(b)(**{**b.__dict__, "similarity": 0.7})], [b]], 3, 60)
    assert [h.chunk_id for h in fused] == ["c1", "c0", "c2"] and fused[0].similarity == 0.7 and fused[0].fused > 0


def test_searches_begun_before_the_reading_are_taken_up_and_find_what_searching_after_it_finds() -> None:
    """The question as asked and glued after the one before are searched while the selector
    reads; the fused hits are those of searching every query after the reading, one search each."""
    from concurrent.futures import ThreadPoolExecutor

    texts = ["Socket Mode runs the Slack bot without a public URL.", "Over HTTP Slack sends events to a URL.",
             "The console chat needs no keys."]
    embedder = BagOfWordsEmbedder()
    r = resolve("And over HTTP?", [SOCKET], selector=Picks("Slack", "bot"))
    after = ListIndex(texts, embedder)
    expected = search(r, embedder, after, 3, None)
    before = ListIndex(texts, embedder)
    with ThreadPoolExecutor(3) as pool:
        started = start_searches([r.asked, r.asked], embedder, before, 3, None, pool)
        assert list(started) == [r.asked]
        got = search(r, embedder, before, 3, None, pool=pool, started=started)
    assert got[0] == expected[0] and [h.chunk_id for h in got[2]] == [h.chunk_id for h in expected[2]]
    assert before.searches == after.searches == 3


def test_the_previous_section_is_set_aside_when_another_says_what_the_follow_up_asks() -> None:
    socket = hit("Socket Mode is the default; run groundbot slack.", 0.8, n=0)
    socket = type(socket)(**{**socket.__dict__, "title": "Running groundbot on Slack",
                             "heading": "How do I run the Slack bot in Socket Mode?"})
    http = type(socket)(**{**socket.__dict__, "chunk_id": "h", "heading": "How do I run the Slack bot over HTTP?",
                           "text": "Run groundbot slack --http behind a public URL."})
    r = resolve("And over HTTP?", [SOCKET], selector=Picks("Slack"))
    assert set_aside_previous([socket, http], r) == [http]
    same = resolve("And what does it cost?", [SOCKET], selector=Picks("Slack"))  # nothing else says so: it stays
    assert set_aside_previous([socket, http], same) == [socket, http]


def test_a_thing_pointed_at_that_the_conversation_never_named_is_unnamed() -> None:
    before = [PriorTurn("Are membership cards free for residents?", "They are free. [C1]", section="Cards > Fees")]
    assert unnamed_referent("What facilities does this library provide?", before) == "this library"
    assert unnamed_referent("What facilities does this card give?", before) == ""  # "cards" was said
    assert unnamed_referent("What do these fees cover?", before) == "these fees"  # a section title is not said
    assert unnamed_referent("Is this possible at all?", before) == "this possible"
    assert unnamed_referent("What does this library provide?", []) == ""  # a first question's "this" is the KB's
    assert unnamed_referent("Is this the one?", before) == ""


def test_an_unnamed_thing_is_offered_as_each_thing_the_sources_name() -> None:
    from core.gate.ambiguity import named_readings
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


def test_an_english_follow_up_after_a_persian_turn_borrows_no_persian_words() -> None:
    selector = Picks("groundbot", "چیست")
    r = resolve("And what does it cost?", [PriorTurn("groundbot چیست؟", "")], selector=selector)
    assert r.method == "standalone" and r.terms == () and selector.read == [([], ["And", "what", "does", "it", "cost"])]
    assert r.leaning == "groundbot چیست؟ And what does it cost?"  # still searched after the turn before


def test_a_long_message_is_also_searched_sentence_by_sentence_and_the_lists_fused() -> None:
    """What the asker tried and an error line come before the ask: each sentence is a query of
    its own, so the ask is found even where the whole message's vector points elsewhere."""
    long = ("I upgraded the server yesterday and now every request behind our nginx proxy and the docker "
            "compose stack fails with a stack trace. The logs say nothing useful. How do I mount static files?")
    r = resolve(long, [])
    assert queries(r) == [long]  # no sentence queries unless asked for
    assert queries(r, 4) == [long, "I upgraded the server yesterday and now every request behind our nginx proxy and "
                             "the docker compose stack fails with a stack trace.", "The logs say nothing useful.",
                             "How do I mount static files?"]
    assert queries(r, 1)[1:] == [queries(r, 4)[1]]
    assert queries(resolve("How do I mount static files? And serve them fast?", []), 4) == [
        "How do I mount static files? And serve them fast?"]  # a short message is searched whole
    emb = BagOfWordsEmbedder()
    index = ListIndex(["Mount static files with StaticFiles under a path.", "Docker compose runs the stack.",
                       "The proxy forwards requests to the server.", "Upgrade the server with pip.",
                       "A stack trace is logged when a request fails."], emb)
    _, _, whole = search(r, emb, index, 2, None)
    _, _, fused = search(r, emb, index, 2, None, sentences=4)
    assert not any("Mount static" in h.text for h in whole) and any("Mount static" in h.text for h in fused)
