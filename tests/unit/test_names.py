"""Multi-word names: found as runs of capitalised words, matched in order in one sentence."""

from core.text.names import name_runs, occurs, tokens, unmatched_names


def test_runs_keep_connectors_inside_and_drop_sentence_openers() -> None:
    assert name_runs("The University of Texas hired Carlos Bacca, of Colombia.") == [
        ["university", "of", "texas"], ["carlos", "bacca"]]
    assert name_runs("Smith went home.") == []  # one word: checked on its own elsewhere
    assert name_runs("Trey Parker and Matt Stone") == [["trey", "parker"], ["matt", "stone"]]


def test_a_name_matches_in_order_with_small_gaps() -> None:
    assert occurs(["carlos", "bacca"], tokens("Carlos Arturo Bacca Ahumada scored."))
    assert not occurs(["montreal", "circuit"], tokens("Circuit Gilles Villeneuve in Montreal"))
    assert occurs(["south", "korea"], tokens("a South Korean film director"))


def test_unmatched_names_look_in_one_sentence_or_the_question() -> None:
    evidence = ["It is located in University Park, Texas.", "The University was founded in 1911."]
    assert unmatched_names("It was the University of Texas.", "q", evidence) == ["university of texas"]
    assert unmatched_names("It was in University Park.", "q", evidence) == []
    assert unmatched_names("Ask the Red Cross.", "Is the Red Cross open?", evidence) == []
    # a capitalised opener is not taken for part of the name
    assert unmatched_names("While University Park is in Texas, it is small.", "q", evidence) == []


def test_a_roman_numeral_stays_part_of_the_name() -> None:
    evidence = ["He was killed in French custody during World War II."]
    assert unmatched_names("He was killed during World War I.", "q", evidence) == ["world war i"]
    assert unmatched_names("He was killed during World War II.", "q", evidence) == []
