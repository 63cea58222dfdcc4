"""The shipped term selector through its onnxruntime runtime: one probability per earlier word,
the words a follow-up needs picked, the same words the same probabilities, and inputs of any size."""

from __future__ import annotations

import pytest

from core.messages import PriorTurn
from core.retrieve.terms import HISTORY_WORDS, history_words, question_words, selected_terms
from models.term_selector import OnnxTermSelector


@pytest.fixture(scope="module")
def selector() -> OnnxTermSelector:
    return OnnxTermSelector()


def test_a_follow_up_gets_the_earlier_words_it_leans_on(selector: OnnxTermSelector) -> None:
    prior = [PriorTurn("When did the Mothers of Invention disband?", "In late 1969, Zappa broke up the band. [C1]",
                       section="Frank Zappa > Disbandment")]
    history, question = history_words(prior), question_words("Why did he break up the band?")
    probabilities = selector.probabilities(history, question)
    assert len(probabilities) == len(history) and all(0.0 <= p <= 1.0 for p in probabilities)
    assert "Zappa" in selected_terms(history, probabilities, question, 0.3)
    assert selector.probabilities(history, question) == probabilities  # a pair run alone: the same every time


def test_empty_and_huge_inputs_give_a_probability_per_word(selector: OnnxTermSelector) -> None:
    assert selector.probabilities([], ["why"]) == [] and selector.probabilities(["Zappa"], []) == [0.0]
    long = history_words([PriorTurn("word " * 2000 + "Zappa?", "x " * 5000, section="A > B")])
    assert len(long) == HISTORY_WORDS
    probabilities = selector.probabilities(long, question_words("why " * 500 + "?"))
    assert len(probabilities) == HISTORY_WORDS
    hostile = ["\u202e", "😀", "'; DROP TABLE turn; --", "تخت", "جمشید"]
    assert len(selector.probabilities(hostile, ["what", "is", "it"])) == len(hostile)
