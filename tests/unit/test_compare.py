from core.compare import check_comparison, options
from core.settings import VerifySettings
from core.verify import verify_answer
from tests.unit.fakes import hit

EVIDENCE = ("Arthur's Magazine (1844–1846) was an American literary periodical published in Philadelphia. "
            "First for Women is a woman's magazine published by Bauer Media Group in the USA since 1989.")
Q = "Which magazine was started first, Arthur's Magazine or First for Women?"


def test_options_are_parsed() -> None:
    assert options(Q) == ("Arthur's Magazine", "First for Women")
    assert options("Who was born first, Pablo Trapero or Aleksander Ford?") == ("Pablo Trapero", "Aleksander Ford")
    assert options("What is the capital of France?") is None


def test_verdict_follows_the_dates() -> None:
    sentences = EVIDENCE.split(". ")
    right = check_comparison(Q, "Arthur's Magazine", sentences)
    wrong = check_comparison(Q, "First for Women was started first.", sentences)
    assert right is not None and right.agrees and right.years == (1844, 1989)
    assert wrong is not None and not wrong.agrees and wrong.expected == "Arthur's Magazine"
    assert check_comparison("Which magazine is bigger, A or B?", "A", sentences) is None


def test_wrong_pick_is_refused_by_the_verifier() -> None:
    cfg = VerifySettings(require_citations=False)
    assert verify_answer("Arthur's Magazine", Q, [hit(EVIDENCE)], cfg).status != "REFUSE"
    v = verify_answer("First for Women was started first.", Q, [hit(EVIDENCE)], cfg)
    assert v.status == "REFUSE" and "evidence dates" in v.claim_map[0]["missing"][0]
