"""The extractive generator with an answerability judge at the port (a fake judge here)."""

from collections.abc import Sequence

from core import reasons
from core.extractive import ExtractiveGenerator, accepted
from core.settings import ExtractiveSettings, JudgeSettings
from tests.unit.fakes import hit


class FakeJudge:
    """Gives each passage the probability of the first listed phrase it contains (else `other`)."""

    def __init__(self, probs: dict[str, float], other: float = 0.0) -> None:
        self.probs, self.other = probs, other
        self.calls: list[tuple[str, list[str]]] = []

    def score(self, question: str, passages: Sequence[str]) -> list[float]:
        self.calls.append((question, list(passages)))
        return [next((p for k, p in self.probs.items() if k in text), self.other) for text in passages]


Q = "Which port does the webhook listen on?"
HITS = [hit("Groundbot is a bot. The webhook listens for updates. The webhook listens on port 8443.", 0.7, n=0,
            heading="Webhooks")]


def gen(judge: FakeJudge, **kw: float) -> ExtractiveGenerator:
    return ExtractiveGenerator(ExtractiveSettings(), judge, JudgeSettings(enabled=True, **kw))  # type: ignore[arg-type]


def test_quotes_only_sentences_the_judge_accepts() -> None:
    judge = FakeJudge({"port 8443": 0.9, "updates": 0.2})
    g = gen(judge, min_answer_probability=0.5).generate(Q, HITS)
    assert g.text == "The webhook listens on port 8443. [C1]" and g.answer_probability == 0.9
    question, passages = judge.calls[0]
    assert question == Q and all(p.startswith("Doc 0 / Webhooks: ") for p in passages)


def test_no_accepted_sentence_is_refused_with_its_own_reason() -> None:
    g = gen(FakeJudge({"port 8443": 0.3}), min_answer_probability=0.5).generate(Q, HITS)
    assert g.text == "" and g.reason == reasons.NOT_ANSWERED_BY_SOURCES
    assert "0.30 < 0.50" in g.explanation and g.answer_probability == 0.3
    assert reasons.NOT_ANSWERED_BY_SOURCES in reasons.ALL and reasons.EXPLANATIONS[reasons.NOT_ANSWERED_BY_SOURCES]


def test_judge_reads_only_the_best_lexical_candidates() -> None:
    judge = FakeJudge({}, other=0.9)
    gen(judge, candidates=2).generate(Q, HITS)
    assert len(judge.calls[0][1]) == 2


def test_quote_floor_still_applies_before_the_judge() -> None:
    judge = FakeJudge({}, other=1.0)
    g = gen(judge).generate(Q, [hit("The webhook listens on port 8443.", 0.40)])
    assert g.reason == reasons.LOW_CONFIDENCE and not judge.calls


def test_disabled_judge_is_not_asked() -> None:
    judge = FakeJudge({}, other=0.0)
    g = ExtractiveGenerator(ExtractiveSettings(), judge, JudgeSettings(enabled=False)).generate(Q, HITS)  # type: ignore[arg-type]
    assert "port 8443" in g.text and not judge.calls


def test_faq_answers_are_not_judged() -> None:
    judge = FakeJudge({}, other=0.0)
    faq = hit("How do I reset?", 0.9, kind="faq", faq_answer="Press the red button twice.")
    assert gen(judge).generate("How can I reset it?", [faq]).faq and not judge.calls


def test_accepted_keeps_the_chosen_sentences_the_judge_accepts() -> None:
    cands = [(0.9, 1, 0, "a"), (0.8, 1, 1, "b"), (0.7, 2, 0, "c")]
    assert accepted(cands, dict(zip(cands, [0.6, 0.95, 0.1], strict=True)), 0.5) == cands[:2]
    assert accepted(cands[2:], {cands[0]: 0.9}, 0.5) == []
