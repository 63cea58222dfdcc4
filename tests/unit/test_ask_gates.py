"""The gates that read the ask (core/gate/ask_gates.py), each alone and in the pipeline's order."""

from __future__ import annotations

from dataclasses import replace

from core import reasons
from core.gate.ask_gates import ASK_GATES, AskView, says_when_gate
from core.generate.extractive import ExtractiveGenerator
from core.messages import ConversationKey, Incoming
from core.ports import Models
from core.settings import CoreSettings, ExtractiveSettings, GateSettings
from core.turn.pipeline import Pipeline
from tests.unit.fakes import BagOfWordsEmbedder, ListIndex, MemoryStore, hit


def _view(question: str, hits: list, **extractive: bool) -> AskView:  # type: ignore[type-arg]
    settings = CoreSettings(extractive=replace(ExtractiveSettings(), **extractive))
    return AskView(question, hits, {}, ListIndex([], BagOfWordsEmbedder()), None, settings)


def test_a_question_asking_when_needs_a_trusted_chunk_that_says_when() -> None:
    """CLAPNQ's "when was the first accurate world map made", answered with a same-topic sentence
    about a map's codfish; a condition answers "when" too; a chunk the reader does not trust does not count."""
    codfish = [replace(hit("The presence of codfish is noted on the Ruysch map near Newfoundland.", 0.7), answer_probability=0.8)]
    refused = says_when_gate(_view("When was the first accurate world map made with codfish?", codfish))
    assert refused is not None and refused.reason == reasons.NOT_ANSWERED_BY_SOURCES and refused.key == "gate_says_when"
    assert says_when_gate(_view("Where is codfish noted on the Ruysch map?", codfish)) is None  # not asked when
    dated = [replace(hit("The Ruysch map with codfish was made in 1507.", 0.7), answer_probability=0.8)]
    assert says_when_gate(_view("When was the Ruysch map with codfish made?", dated)) is None
    untrusted = [*codfish, replace(dated[0], answer_probability=0.1)]
    assert says_when_gate(_view("When was the Ruysch map with codfish made?", untrusted)) is not None
    rule = [hit("The verifier refuses an answer if a claim has no citation.", 0.7)]  # unread: every chunk counts
    assert says_when_gate(_view("When does the verifier refuse an answer?", rule)) is None
    assert says_when_gate(_view("When was the first accurate world map made?", codfish, asks_when=False)) is None


def test_the_gates_are_named_and_a_refusal_names_the_one_that_failed() -> None:
    assert [gate.name for gate in ASK_GATES] == ["mentioned_words", "says_when"]
    emb = BagOfWordsEmbedder()
    kb = ["The presence of codfish is noted on the Ruysch map near Newfoundland."]
    settings = CoreSettings(gates=replace(GateSettings(), min_top1_similarity=0.1, min_mean_confidence=0.0,
                                          chunk_floor=0.0, min_context_chars=10),
                            extractive=replace(ExtractiveSettings(), min_quote_similarity=0.0))
    p = Pipeline(settings, Models(emb, ExtractiveGenerator(ExtractiveSettings())), ListIndex(kb, emb), MemoryStore())
    d = p.handle(Incoming(ConversationKey("t", "1"), "u", "When was the Ruysch map with codfish noted?"))
    assert d.refused and "says_when" in d.checks_failed and "mentioned_words" in d.checks_passed
    assert d.explanation == "The question asks when, and no source that answers it says when."
    assert not d.llm_called
