"""'Yes, both ...' answers: what they add must be said of each of the two options."""

from dataclasses import replace

from core.settings import VerifySettings
from core.verify import verify_answer
from core.verify.both_answers import check_both, pair
from tests.unit.fakes import hit

EVIDENCE = ["San Diego International Airport is an airport in San Diego, California.",
            "McCarran International Airport is the main airport serving Las Vegas, Nevada."]
Q = "Are San Diego International Airport and McCarran International Airport located in the same state?"


def test_the_pair_of_a_yes_no_question() -> None:
    assert pair(Q) == ("San Diego International Airport", "McCarran International Airport")
    assert pair("Were Eatza Pizza and Your Pie founded in the same state?") == ("Eatza Pizza", "Your Pie")
    assert pair("Who founded Eatza Pizza and Your Pie?") is None  # not a yes/no question


def test_an_attribute_said_of_one_option_only_is_not_said_of_both() -> None:
    verdict = check_both(Q, "Yes, both airports are located in California.", EVIDENCE)
    assert verdict is not None and not verdict.supported and verdict.checked == ("california",)
    assert check_both(Q, "No, one is in California and the other in Nevada.", EVIDENCE) is None


def test_the_verifier_refuses_the_false_both_and_keeps_a_true_one() -> None:
    cfg = replace(VerifySettings(), require_citations=False)
    ev = [hit(" ".join(EVIDENCE))]
    wrong = verify_answer("Yes, both airports are located in California.", Q, ev, cfg)
    assert wrong.status == "REFUSE" and "California" not in wrong.claim_map[0].missing[0]
    assert "of San Diego International Airport" in wrong.claim_map[0].missing[0]
    both = [hit("Robin Hobb is an American writer of fantasy. Stephen King is an American writer of horror.")]
    ok = verify_answer("Yes, both write fantasy and horror.", "Are Robin Hobb and Stephen King both writers?", both, cfg)
    assert ok.status == "REFUSE"  # horror is said of King only, fantasy of Hobb only
    true = verify_answer("Yes, both are American writers.", "Are Robin Hobb and Stephen King both writers?", both, cfg)
    assert true.status != "REFUSE"
