"""Gates as one kind of thing (core/gate/chain.py, core/gate/gates.py): a turn's gates are one
ordered list of named gates, each returning a typed verdict, and the record lists them as it
always has."""

from __future__ import annotations

from core import reasons
from core.gate.chain import WARN, Gate, Listed, Verdict, refuse, run_chain
from core.gate.gates import GATES
from core.reasons import Reason


def test_a_turns_gates_are_one_list_in_order() -> None:
    assert [g.name for g in GATES] == [
        "unnamed_thing", "has_matches", "offtopic_floor", "top1_similarity", "mean_confidence",
        "context_sufficiency", "keyword_coverage", "answered_by_sources", "mentioned_words", "says_when",
        "one_reading"]


def _gate(name: str, verdict: Verdict | None, listed: Listed = Listed.ALWAYS, applies: bool = True) -> Gate[int]:
    return Gate(name, lambda _: verdict, applies=lambda _: applies, measures=lambda n: {name: n}, listed=listed)


def test_the_first_refusal_ends_the_chain_and_names_itself_as_its_gate_is_listed() -> None:
    no = refuse(reasons.NOT_ANSWERED_BY_SOURCES, "gate_says_when", detail="why")
    result = run_chain([_gate("a", None), _gate("skipped", no, applies=False), _gate("w", WARN), _gate("b", no),
                        _gate("never_run", None)], 7)
    assert not result.passed and result.reason is Reason.NOT_ANSWERED_BY_SOURCES and result.refusal == no
    assert result.checks_passed == ["a"] and result.checks_failed == ["w(warn)", "b"] and result.warnings == ["w"]
    assert result.scores == {"a": 7, "w": 7, "b": 7}  # the measures of the gates that ran
    quiet = run_chain([_gate("a", None, Listed.WHEN_REFUSING), _gate("b", no, Listed.NEVER)], 1)
    assert quiet.checks_passed == [] and quiet.checks_failed == [] and quiet.reason is Reason.NOT_ANSWERED_BY_SOURCES


def test_a_gate_runs_on_the_part_of_a_larger_view_it_reads() -> None:
    over_text = Gate("short", lambda t: refuse(reasons.INPUT_REJECTED) if len(t) < 3 else None, measures=lambda t: {"n": len(t)})
    over_pair = over_text.on(lambda pair: pair[1])
    assert run_chain([over_pair], (0, "ab")).scores == {"n": 2}
    assert run_chain([over_pair], (0, "abc")).passed
