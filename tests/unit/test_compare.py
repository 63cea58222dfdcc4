from core.settings import VerifySettings
from core.verify import verify_answer
from core.verify.compare import check_comparison, options
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
    assert right is not None and right.agrees and "1844" in right.note and "1989" in right.note
    assert wrong is not None and not wrong.agrees and wrong.expected == "Arthur's Magazine"
    assert check_comparison("Which magazine is bigger, A or B?", "A", sentences) is None


def test_wrong_pick_is_refused_by_the_verifier() -> None:
    cfg = VerifySettings(require_citations=False)
    assert verify_answer("Arthur's Magazine", Q, [hit(EVIDENCE)], cfg).status != "REFUSE"
    v = verify_answer("First for Women was started first.", Q, [hit(EVIDENCE)], cfg)
    assert v.status == "REFUSE" and "evidence dates" in v.claim_map[0].missing[0]


PLANTS = ("Cardwellia is a monotypic genus of trees in the family Proteaceae, found in Queensland, Australia. "
          "Ochagavia is a genus of plants in the family Bromeliaceae. It is native to Chile and the Juan "
          "Fernández Islands in South America.")
PLANTS_Q = "Which genus, Cardwellia or Ochagavia, is native to South America?"


def test_options_written_into_the_sentence_are_cut_to_their_names() -> None:
    assert options("Is Children's National Medical Center or MedStar Washington Hospital Center the largest "
                   "private hospital in Washington, D.C.?") == ("Children's National Medical Center",
                                                               "MedStar Washington Hospital Center")
    assert options("Was Winnie the Pooh or The Jungle Book released first?") == ("Winnie the Pooh", "The Jungle Book")
    assert options("Which is older, cats or dogs?") == ("cats", "dogs")


def test_predicate_check_follows_what_the_evidence_says_of_each_option() -> None:
    sentences = PLANTS.split(". ")
    right = check_comparison(PLANTS_Q, "Ochagavia", sentences)
    wrong = check_comparison(PLANTS_Q, "Cardwellia is native to South America.", sentences)
    assert right is not None and right.agrees
    assert wrong is not None and not wrong.agrees and wrong.expected == "Ochagavia"
    # naming both without saying which is picked is not a pick
    assert check_comparison(PLANTS_Q, "Cardwellia and Ochagavia are genera.", sentences) is None


def test_a_relation_between_both_options_picks_by_the_question_direction() -> None:
    sentences = EVIDENCE.split(". ")
    before = check_comparison(Q, "First for Women was started before Arthur's Magazine.", sentences)
    after = check_comparison(Q, "First for Women was started after Arthur's Magazine.", sentences)
    assert before is not None and before.picked == "First for Women" and not before.agrees
    assert after is not None and after.picked == "Arthur's Magazine" and after.agrees


def test_between_a_and_b_questions_have_options() -> None:
    assert options("Between the Lapageria and Satureja genus, which is the national flower of Chile?") == (
        "Lapageria", "Satureja")
    assert options("In between Splash and Son of Flubber, which one was directed by Ron Howard?") == (
        "Splash", "Son of Flubber")
