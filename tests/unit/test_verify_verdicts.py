"""The verifier's verdicts are typed (core/verify/rules.py): a `Status` and `Reason`s, each rule's
verdict carrying what the record needs, with no rule singled out by its name."""

from __future__ import annotations

from core.reasons import Reason, Status
from core.settings import VerifySettings
from core.verify import verify_answer
from core.verify.rules import CITATION_RULES, CLAIM_RULES, RULES
from tests.unit.fakes import hit

HITS = [hit("Webhooks listen on port 8443.", 0.9)]


def test_a_passing_answer_is_a_pass_with_its_claims_mapped() -> None:
    v = verify_answer("Webhooks listen on port 8443 [C1].", "Which port do webhooks listen on?", HITS, VerifySettings())
    assert v.status is Status.PASS and v.reasons == [] and v.claim_map and v.supported_claims == 1
    assert v.checks_passed == [r.__name__ for r in RULES]


def test_a_refusal_on_its_citations_names_the_claims_and_maps_none() -> None:
    v = verify_answer("Webhooks listen on port 8443 [C9].", "Which port?", HITS, VerifySettings())
    assert v.status is Status.REFUSE and v.reasons == [Reason.INVALID_CITATIONS]
    assert v.uncovered_claims == ["Webhooks listen on port 8443."]
    assert not v.claim_map and v.checks_failed == ["citations_valid"]


def test_the_rules_read_the_citations_then_the_mapped_claims() -> None:
    assert RULES == CITATION_RULES + CLAIM_RULES and CLAIM_RULES[0].__name__ == "claim_mapping"
