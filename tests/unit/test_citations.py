"""The [Cn] citation marker is read in one place (core/text/citations.py): the renderer, the
verifier, the turn record and the review desk read the same markers as the same numbers, however
an LLM writes them."""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import UTC, datetime

import pytest

from bot.services.review import ReviewCards, user_decision, without_citations
from core import reasons
from core.messages import Decision, Hit, Incoming
from core.ports import Models
from core.render import display_answer, render_text
from core.retrieve.terms import word_list
from core.settings import ReviewSettings, VerifySettings
from core.text.citations import cited, for_display, has_marker, marker, markers, rewrite, strip_markers
from core.text.sentences import split_claims
from core.turn.pipeline import Pipeline
from core.verify import verify_answer
from storage.records.reviews import QueueEntry
from tests.unit.fakes import BagOfWordsEmbedder, ListIndex, MemoryStore, QueueGenerator
from tests.unit.test_pipeline import KEY, SETTINGS

CLAIM = "The webhook listens on port 8443"
# a draft's marker as an LLM may write it -> the source numbers it cites
BAD = [("[C1, C3]", [1, 3]), ("[c2]", [2]), ("[C 4]", [4]), ("[C99]", [99]), ("【C1】", [1])]
# four sources that each say what CLAIM says, so any of them supports it
KB = [
    "The Telegram webhook listens on port 8443 and rejects requests without the secret token header.",
    "By default the Telegram webhook listens on port 8443; the webhook port setting changes it.",
    "Behind a proxy the Telegram webhook still listens on port 8443, and the proxy forwards to it.",
    "The Telegram webhook listens on port 8443 over HTTPS with the certificate you configure.",
]
QUESTION = "Which port does the Telegram webhook listen on?"


@pytest.mark.parametrize(("written", "numbers"), BAD)
def test_each_way_of_writing_a_marker_reads_as_its_numbers(written: str, numbers: list[int]) -> None:
    text = f"{CLAIM} {written}."
    assert cited(text) == numbers and [m.numbers for m in markers(text)] == [tuple(numbers)]
    assert strip_markers(text) == f"{CLAIM}." and not has_marker(strip_markers(text))
    assert for_display(text) == f"{CLAIM} {''.join(f'[{n}]' for n in numbers)}."
    assert [c.citations for c in split_claims(text)] == [tuple(numbers)]
    assert word_list(text) == word_list(f"{CLAIM}.")  # a marker is no word the term selector reads


def test_a_list_cites_each_number_and_is_shown_one_bracket_a_number() -> None:
    assert cited("a [C1, C3] b [C2;C4] c [C5, 6]") == [1, 3, 2, 4, 5, 6]
    assert for_display("Done [C1, C3].") == "Done [1][3]."
    assert display_answer("Done [C1, C3]. Also [c2] and 【C4】.") == "Done [1][3]. Also [2] and [4]."


def test_what_is_no_marker_is_left_as_written() -> None:
    text = "See [the list] and arr[1], [C] or [Cx]."
    assert cited(text) == [] and for_display(text) == text and strip_markers(text) == text
    assert [m.numbers for m in markers("Shown as [2] and [C3].", shown=True)] == [(2,), (3,)]


def test_the_blanks_before_a_marker_go_with_it() -> None:
    assert strip_markers("It listens [C1] on 8443 [C2] .") == "It listens on 8443."
    assert strip_markers("[C1] First.\n\nSecond [C2].") == "First.\n\nSecond."


def test_the_written_marker_reads_back() -> None:
    assert marker(2) == "[C2]" and marker(2, 3) == "[C2][C3]"
    assert cited(f"x {marker(1, 3)}") == [1, 3]
    assert rewrite("a [C1, C3] b", lambda m: marker(*(n + 1 for n in m.numbers))) == "a [C2][C4] b"


def _hits(n: int) -> list[Hit]:
    return [Hit(f"c{i}", f"d{i}", "", "", "", text, 0.8) for i, text in enumerate(KB[:n], start=1)]


@pytest.mark.parametrize("sources", [3, 4])
def test_a_marker_that_names_no_source_is_an_invalid_citation(sources: int) -> None:
    """[C99] names no source of three or four; [C 4] reads as C4, a source of four but not of three."""
    for written, numbers in BAD:
        v = verify_answer(f"{CLAIM} {written}.", QUESTION, _hits(sources), VerifySettings())
        invalid = any(n > sources for n in numbers)
        assert (v.reasons == [reasons.INVALID_CITATIONS]) is invalid, written
        assert v.status == ("REFUSE" if invalid else "PASS"), written
        if invalid:
            assert v.uncovered_claims == [f"{CLAIM}."]
        else:
            assert [c.citations for c in v.claim_map] == [numbers]


def _held(draft: str) -> Decision:
    """The decision of a turn whose verified draft is held for review (every answer is held)."""
    emb = BagOfWordsEmbedder()
    gen = QueueGenerator()
    settings = replace(SETTINGS, review=ReviewSettings(template_risk=0.0, hold_risk=0.0))
    gen.enqueue(draft, confidence=0.9)
    pipeline = Pipeline(settings, Models(emb, gen), ListIndex(KB, emb), MemoryStore())
    return pipeline.handle(Incoming(KEY, "u1", QUESTION))


def _entry(d: Decision) -> QueueEntry:
    return QueueEntry(1, 1, "held", reasons.NEEDS_REVIEW, "", "open", "", "", datetime.now(UTC), None, "console",
                      "chat-1", "", "u1", d.to_dict())


def _shown(text: str) -> list[int]:
    return [int(n) for n in re.findall(r"\[(\d+)\]", text)]


@pytest.mark.parametrize(("written", "numbers"), BAD)
def test_renderer_verifier_record_and_review_desk_read_a_marker_alike(written: str, numbers: list[int]) -> None:
    draft = f"{CLAIM} {written}."
    d = _held(draft)
    assert d.scores["context_chunks"] == 4  # every source may be cited: only [C99] names none
    if numbers == [99]:  # the verifier refuses it; nothing is held, recorded as a source or shown
        assert d.refused and d.refusal_reason == reasons.INVALID_CITATIONS and d.state == "refused"
        assert d.sources == [] and d.draft == "" and d.uncovered_claims == [f"{CLAIM}."]
        return
    assert d.state == "pending_review" and d.draft == draft
    assert [c.citations for c in d.claim_map] == [numbers]  # the verifier
    assert [s.number for s in d.sources] == numbers  # the record: every number the held draft cites
    entry = _entry(d)
    approved = user_decision(entry, entry.draft)  # the review desk, as an admin approves it
    assert [s.number for s in approved.sources] == numbers
    shown = render_text(approved)  # the renderer: the answer's numbers are its source lines' numbers
    answer, _, source_lines = shown.partition("\n\nSources:\n")
    assert _shown(answer) == numbers == _shown(source_lines) and not has_marker(shown)
    assert without_citations(entry.draft) == f"{CLAIM}."  # as an FAQ stores it
    card = ReviewCards(None).show(entry)  # type: ignore[arg-type]  # the card reads no queue
    assert card.prefill == f"{CLAIM}." and f"Draft: {draft}" in card.sections[0].text
