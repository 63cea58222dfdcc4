"""The decision record is typed once: its JSON form is the model's, parsed back by the model,
with the keys stored records already have."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from core.messages import ClaimRecord, Decision, Resolution, Source, Suggestion
from core.reasons import Route, State, Status


def decision(**fields: object) -> Decision:
    base: dict[str, object] = dict(
        question="what does it reject?", normalized_question="what does it reject?", retrieval_query="q",
        answer="Requests without the secret [C1].", refused=False, refusal_reason="", refusal_message="",
        explanation="", status=Status.PASS, state=State.REPLIED, reasons=[], checks_passed=["a"], checks_failed=[],
        scores={"top1": 0.8, "chunks": 3, "judge": None}, llm_called=False,
        sources=[Source(1, "docs/telegram.md", "c1", "Telegram", "Webhook", "docs/telegram.md", "", 0.81234)],
        suggestions=[Suggestion(4, "How do I set the secret?")], uncovered_claims=[], latency_ms={"total": 12.5},
        index_version="v1", config_hash="h", language="en", route=Route.REPLY,
        claim_map=[ClaimRecord("Requests without the secret.", [1], 0.9, ["It rejects requests without it."], [1], [],
                               True, {"overlap": 1.0}, 0.97)],
        resolution=Resolution("what does it reject?", "what does it reject? webhook", follow_up=True, method="terms",
                              previous="How does the webhook work?", terms=("webhook",)))
    return Decision(**{**base, **fields})  # type: ignore[arg-type]


def test_the_json_form_keeps_the_stored_keys_and_parses_back_to_the_same_decision() -> None:
    d = decision()
    stored = json.loads(json.dumps(d.to_dict()))
    assert stored["sources"][0]["n"] == 1 and stored["sources"][0]["doc"] == "docs/telegram.md"
    assert stored["sources"][0]["score"] == 0.8123 and stored["status"] == "PASS" and stored["route"] == "reply"
    assert stored["resolution"]["reading"] == "what does it reject? webhook" and stored["resolution"]["terms"] == ["webhook"]
    back = Decision.from_dict(stored)
    assert back.status is Status.PASS and back.state is State.REPLIED and back.route is Route.REPLY
    assert back.resolution == d.resolution and back.claim_map == d.claim_map and back.suggestions == d.suggestions
    assert back.sources[0].score == 0.8123 and back.to_dict() == stored


def test_a_claim_of_an_older_record_is_read_under_its_old_names() -> None:
    [claim] = Decision.from_dict({**decision().to_dict(), "claim_map": [
        {"text": "It listens on 8443.", "missing_critical": ["8443"], "citations": [2]}]}).claim_map
    assert claim.claim == "It listens on 8443." and claim.missing == ["8443"] and not claim.supported


def test_a_record_with_an_unknown_state_is_refused_not_guessed() -> None:
    with pytest.raises(ValidationError):
        Decision.from_dict({**decision().to_dict(), "state": "half-done"})


@pytest.mark.parametrize(("status", "route", "removed", "warned"), [
    (Status.WARN, Route.REPLY, [], True),
    (Status.WARN, Route.TEMPLATE, [], False),  # the sources quoted verbatim
    (Status.WARN, Route.REPLY, ["a claim left out"], False),  # says what was left out instead
    (Status.PASS, Route.REPLY, [], False),
])
def test_the_warning_note_is_decided_by_the_record(status: Status, route: Route, removed: list[str],
                                                   warned: bool) -> None:
    assert decision(status=status, route=route, removed_claims=removed).warned is warned


def test_a_held_decision_says_so() -> None:
    assert decision(state=State.PENDING_REVIEW, refused=True).held and not decision().held
