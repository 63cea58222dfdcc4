"""Every gate of a turn, in the order they run: each refusal decided before an answer is
written. The first that refuses ends the turn before any generator (any language model) is
called, and names itself in the record's `checks_failed`; docs/architecture.md ("How do I add
a gate?") lists them and says how to add one.
"""

from __future__ import annotations

from core.gate.ambiguity import one_reading, unnamed_thing
from core.gate.ask_gates import ASK_GATES, AskView
from core.gate.chain import Gate, GateResult, Listed, Scores, Verdict, run_chain
from core.gate.passage_reading import answered_by_sources
from core.gate.similarity_gates import SIMILARITY_GATES, Similarity
from core.gate.view import GateView


def _similarity(view: GateView) -> Similarity:
    return view.similarity


def _ask(view: GateView) -> AskView:
    return view.ask


def _answered(view: GateView) -> Verdict | None:
    return answered_by_sources(view.reading) if view.reading is not None else None


def _read(view: GateView) -> bool:
    return view.reading is not None


def _reader_scores(view: GateView) -> Scores:
    return view.reading.scores() if view.reading is not None else {}


GATES: tuple[Gate[GateView], ...] = (
    # the ask-back, on retrieval's reading: it has always refused before the other gates ran,
    # and the record names it by its reason code alone
    Gate("unnamed_thing", unnamed_thing, listed=Listed.NEVER),
    # has_matches, offtopic_floor, top1_similarity, mean_confidence, context_sufficiency, and
    # keyword_coverage, which only warns: on the reader's order, with its thresholds once it read
    *(gate.on(_similarity) for gate in SIMILARITY_GATES),
    # the passage reader's verdict: does any chunk it read answer the question?
    Gate("answered_by_sources", _answered, applies=_read, measures=_reader_scores),
    # mentioned_words, says_when: the user's own words against the chunks the reader let through
    *(gate.on(_ask) for gate in ASK_GATES),
    # a short question the sources answer in clearly different ways; named only when it refuses
    Gate("one_reading", one_reading, applies=_read, listed=Listed.WHEN_REFUSING),
)


def gate_turn(view: GateView) -> GateResult:
    """Run a turn's gates in order on `view`; the result carries what the turn goes on with."""
    result = run_chain(GATES, view)
    result.resolution, result.hits, result.kept = view.settled()
    return result
