"""The passage reader's part of a turn (core/gate/passage_reading.py, core/turn/pipeline.py): it reranks the
retrieved chunks, refuses before any generator call when none answers, lets a paraphrase through
the similarity gates, and the extractive generator quotes only from chunks it trusts."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from core import reasons
from core.gate.passage_reading import read
from core.gate.reader_view import ask_view, reader_passage
from core.generate.extractive import ExtractiveGenerator
from core.messages import ConversationKey, Incoming
from core.ports import Models
from core.settings import CoreSettings, ExtractiveSettings, GateSettings, Mode, ReaderSettings, for_mode
from core.turn.pipeline import Pipeline
from tests.unit.fakes import BagOfWordsEmbedder, ListIndex, MemoryStore, QueueGenerator, hit

KB = [
    "To re-ingest documents run the ingest command again; changed documents are embedded again.",
    "The Telegram webhook listens on port 8443 and rejects requests without the secret token header.",
    "Slack mentions are answered in the thread of the question, with sources listed under the answer.",
]
KEY = ConversationKey("test", "chat-1")
ONE_BATCH = ReaderSettings(settle_probability=0.0)  # every chunk read at once, none settled by the first


class WordReader:
    """A fake reader: a passage answers when it holds the marker word; records every call."""

    def __init__(self, marker: str, p: float = 0.9) -> None:
        self.marker, self.p = marker, p
        self.calls: list[tuple[str, list[str]]] = []

    def score(self, question: str, passages: Sequence[str]) -> list[float]:
        self.calls.append((question, list(passages)))
        return [self.p if self.marker in passage else 0.05 for passage in passages]


class QuotingQueue(QueueGenerator):
    """The queue generator taken for one that quotes (as the extractive generator does)."""

    mode = Mode.QUOTE


def _pipeline(reader: WordReader, gates: GateSettings | None = None,
              gen: QueueGenerator | None = None) -> tuple[Pipeline, QueueGenerator]:
    emb = BagOfWordsEmbedder()
    settings = CoreSettings(gates=gates or replace(GateSettings(), min_top1_similarity=0.3, min_mean_confidence=0.0,
                                                   chunk_floor=0.05, min_context_chars=40))
    gen = gen or QueueGenerator()
    return Pipeline(settings, Models(emb, gen, reader=reader), ListIndex(KB, emb), MemoryStore()), gen


def test_read_reranks_the_chunk_that_answers_first_in_one_batch() -> None:
    hits = [hit("Slack threads hold answers.", 0.8, n=0), hit("The webhook uses port 8443.", 0.6, n=1)]
    reader = WordReader("8443")
    got = read("Which port?", hits, reader, ONE_BATCH, ExtractiveSettings())
    assert [h.chunk_id for h in got.hits] == ["c1", "c0"] and got.answered and got.best == 0.9
    assert len(reader.calls) == 1 and len(reader.calls[0][1]) == 2  # one run for the question's chunks
    assert got.hits[0].answer_probability == 0.9 and got.hits[1].answer_probability == 0.05


class FixedReader:
    """A fake reader giving each passage, in order, the next of its probabilities."""

    def __init__(self, probs: Sequence[float]) -> None:
        self.probs = list(probs)

    def score(self, question: str, passages: Sequence[str]) -> list[float]:
        return self.probs[: len(passages)]


def test_similarity_weight_lets_retrieval_break_the_readers_near_ties() -> None:
    hits = [hit("the section asked about", 0.85, n=0), hit("its sibling section", 0.5, n=1)]
    alone = read("q", hits, FixedReader([0.80, 0.86]), replace(ONE_BATCH, similarity_weight=0.0),
                 ExtractiveSettings())
    assert [h.chunk_id for h in alone.hits] == ["c1", "c0"]  # the reader alone: the sibling first
    blended = read("q", hits, FixedReader([0.80, 0.86]), replace(ONE_BATCH, similarity_weight=1.0),
                   ExtractiveSettings())
    assert [h.chunk_id for h in blended.hits] == ["c0", "c1"] and blended.best == 0.86  # 1.65 > 1.36
    far = read("q", hits, FixedReader([0.10, 0.90]), replace(ONE_BATCH, similarity_weight=1.0),
               ExtractiveSettings())
    assert [h.chunk_id for h in far.hits] == ["c1", "c0"]  # a chunk that answers still beats one that does not


def test_read_only_the_first_chunks_and_keep_the_rest_in_order() -> None:
    hits = [hit(f"text {i}", 0.9 - i / 10, n=i) for i in range(4)]
    got = read("q", hits, WordReader("zzz"), replace(ReaderSettings(), chunks=2), ExtractiveSettings())
    assert [h.chunk_id for h in got.hits] == ["c0", "c1", "c2", "c3"] and not got.answered
    assert got.hits[2].answer_probability is None


def test_the_chunk_nearest_the_question_is_read_even_when_the_fused_order_ranks_it_past_those_read() -> None:
    """The full-text leg can lift chunks sharing a word of the question above the section a
    paraphrase asks about: that section, the nearest by similarity, takes the last place read."""
    hits = [hit("text 0", 0.42, n=0), hit("text 1", 0.40, n=1), hit("text 2", 0.52, n=2), hit("the terminal", 0.58, n=3)]
    cfg = replace(ONE_BATCH, chunks=3)
    reader = WordReader("terminal")
    got = read("How do I start a chat in the console?", hits, reader, cfg, ExtractiveSettings())
    assert [p for p in reader.calls[0][1] if "terminal" in p] and len(reader.calls[0][1]) == 3
    assert "text 2" not in " ".join(reader.calls[0][1])  # the third of the fused order gave its place
    assert [h.chunk_id for h in got.hits] == ["c3", "c0", "c1", "c2"] and got.answered
    assert got.hits[3].answer_probability is None
    off = WordReader("terminal")
    got = read("q", hits, off, replace(cfg, read_nearest=False), ExtractiveSettings())
    assert not got.answered and [h.chunk_id for h in got.hits][3] == "c3"


def test_a_first_chunk_that_surely_answers_settles_the_question_without_reading_the_others() -> None:
    cfg = replace(ReaderSettings(), settle_probability=0.8)
    first = [hit("The webhook uses port 8443.", 0.8, n=0), hit("Slack threads.", 0.7, n=1), hit("Ingest.", 0.6, n=2)]
    reader = WordReader("8443")
    got = read("Which port?", first, reader, cfg, ExtractiveSettings())
    assert [len(p) for _, p in reader.calls] == [1] and got.answered and got.best == 0.9 and got.read == 1
    assert [h.chunk_id for h in got.hits] == ["c0", "c1", "c2"] and got.hits[1].answer_probability is None
    later = [first[1], first[0], first[2]]  # the first chunk does not answer: the others are read, not it again
    reader = WordReader("8443")
    got = read("Which port?", later, reader, cfg, ExtractiveSettings())
    assert [len(p) for _, p in reader.calls] == [1, 2]
    assert "Slack" in reader.calls[0][1][0] and "8443" in reader.calls[1][1][0] and "Ingest" in reader.calls[1][1][1]
    assert got.hits[0].chunk_id == "c0"
    assert [h.answer_probability for h in got.hits] == [0.9, 0.05, 0.05] and got.read == 3
    unsure = WordReader("8443", p=0.6)  # answers, but not surely enough to settle
    read("Which port?", first, unsure, cfg, ExtractiveSettings())
    assert [len(p) for _, p in unsure.calls] == [1, 2]
    far = [replace(first[0], similarity=0.45), first[1], first[2]]  # retrieval unsure of it: a paraphrase
    unsure_retrieval = WordReader("8443")
    assert read("Which port?", far, unsure_retrieval, cfg, ExtractiveSettings()).read == 3
    assert [len(p) for _, p in unsure_retrieval.calls] == [1, 2]
    once = WordReader("8443")
    read("Which port?", first, once, ONE_BATCH, ExtractiveSettings())
    assert [len(p) for _, p in once.calls] == [3]  # without settling: one run for all


def test_a_first_chunk_another_retrieved_chunk_is_clearly_nearer_does_not_settle() -> None:
    """Retrieval's fused order put a sibling section first while the section asked about, retrieved
    later, is nearer the question: the others are read too, and the one that answers comes first."""
    cfg = replace(ReaderSettings(), settle_probability=0.8, settle_max_gap=0.1, similarity_weight=1.0)
    sibling = hit("The webhook uses port 8443.", 0.62, n=0)
    nearer = hit("The webhook port is 8443 by default.", 0.75, n=1)
    hits = [sibling, hit("Slack threads.", 0.5, n=2), nearer]
    reader = WordReader("8443")
    got = read("Which port?", hits, reader, cfg, ExtractiveSettings())
    assert [len(p) for _, p in reader.calls] == [1, 2] and got.read == 3
    assert got.hits[0].chunk_id == "c1"  # the same probability; weighed by similarity, the nearer chunk wins the tie
    close = [replace(sibling, similarity=0.7), hits[1], nearer]  # 0.05 nearer only: retrieval is sure enough
    reader = WordReader("8443")
    assert read("Which port?", close, reader, cfg, ExtractiveSettings()).read == 1
    assert read("Which port?", hits, WordReader("8443"), replace(cfg, settle_max_gap=1.0), ExtractiveSettings()).read == 1


def test_a_heading_or_faq_question_asked_as_written_is_answered_whatever_the_reader_says() -> None:
    heading = hit("Run groundbot ingest.", 0.9, n=0, heading="Ingesting")
    heading = replace(heading, heading_similarity=0.95)
    assert read("Ingesting", [heading], WordReader("zzz"), ReaderSettings(), ExtractiveSettings()).answered


def test_no_chunk_answers_refuses_before_the_generator() -> None:
    p, gen = _pipeline(WordReader("zzz"))
    d = p.handle(Incoming(KEY, "u1", "Which port does the Telegram webhook listen on?"))
    assert d.refused and d.refusal_reason == reasons.NOT_ANSWERED_BY_SOURCES
    assert gen.calls == [] and not d.llm_called
    assert "answered_by_sources" in d.checks_failed and d.scores["reader_best"] == 0.05
    assert "read" in d.latency_ms


def test_the_chunk_that_answers_is_cited_first_and_scores_are_recorded() -> None:
    p, gen = _pipeline(WordReader("8443"))
    gen.enqueue("The webhook listens on port 8443 [C1].", confidence=0.9)
    d = p.handle(Incoming(KEY, "u1", "Which port does the Telegram webhook listen on?"))
    assert not d.refused and d.sources[0].doc_id == "d1"
    assert "answered_by_sources" in d.checks_passed and d.scores["reader_best"] == 0.9
    assert d.scores["reader_chunks_read"] == 3  # with a language model every chunk it may cite is read


def test_a_paraphrase_below_the_similarity_gate_is_read_not_refused() -> None:
    strict = replace(GateSettings(), min_top1_similarity=0.95, min_mean_confidence=0.9, chunk_floor=0.05,
                     min_context_chars=40)
    without, _ = _pipeline(WordReader("8443"), strict)
    without.models = replace(without.models, reader=None)
    assert without.handle(Incoming(KEY, "u1", "Which port does the Telegram webhook listen on?")).refused
    p, gen = _pipeline(WordReader("8443"), strict)
    gen.enqueue("The webhook listens on port 8443 [C1].", confidence=0.9)
    assert not p.handle(Incoming(KEY, "u1", "Which port does the Telegram webhook listen on?")).refused


def test_a_failing_reader_leaves_the_decision_to_the_similarity_gates() -> None:
    class Broken(WordReader):
        def score(self, question: str, passages: Sequence[str]) -> list[float]:
            raise RuntimeError("model file unreadable")

    p, gen = _pipeline(Broken("x"))
    gen.enqueue("The webhook listens on port 8443 [C1].", confidence=0.9)
    d = p.handle(Incoming(KEY, "u1", "Which port does the Telegram webhook listen on?"))
    assert not d.refused and "reader_best" not in d.scores


def test_the_extractive_generator_quotes_only_from_chunks_the_reader_trusts() -> None:
    gen = ExtractiveGenerator(ExtractiveSettings(), trust=0.5)
    talks = replace(hit("The webhook port is set in config.toml under telegram.", 0.9, n=0), answer_probability=0.1)
    answers = replace(hit("The webhook listens on port 8443.", 0.4, n=1), answer_probability=0.8)
    text = gen.generate("Which port does the webhook listen on?", [answers, talks]).text
    assert "8443" in text and "config.toml" not in text and "[C1]" in text


def test_a_settled_question_is_quoted_only_from_the_chunk_that_settled_it() -> None:
    gen = ExtractiveGenerator(ExtractiveSettings(), trust=0.4)
    settled = replace(hit("The webhook listens on port 8443.", 0.6, n=0), answer_probability=0.9)
    unread = hit("The webhook port is also printed by the status command on port 9000.", 0.5, n=1)
    text = gen.generate("Which port does the webhook listen on?", [settled, unread]).text
    assert "8443" in text and "9000" not in text
    without_reader = gen.generate("Which port does the webhook listen on?", [replace(settled, answer_probability=None), unread]).text
    assert "9000" in without_reader  # no chunk read: every chunk may be quoted, as before the reader


def test_the_view_keeps_the_sentences_that_share_the_question_words_in_order() -> None:
    filler = " ".join(f"Sentence {i} says nothing useful here at all." for i in range(20))
    text = filler + " The webhook listens on port 8443."
    view = reader_passage("Which port does the webhook listen on?", "Telegram", "Webhook", text, words=30)
    assert view.startswith("Telegram / Webhook: ") and "port 8443" in view and len(view.split()) <= 30
    assert view == reader_passage("Which port does the webhook listen on?", "Telegram", "Webhook", text, words=30)


def test_a_language_model_needs_the_reader_less_sure_than_a_quote() -> None:
    """Every claim a language model writes is verified after; a quote is not, so the extractive
    generator needs the reader surer (llm_min_answer_probability < min_answer_probability)."""
    p, gen = _pipeline(WordReader("8443", p=0.3))
    gen.enqueue("The webhook listens on port 8443 [C1].", confidence=0.9)
    assert not p.handle(Incoming(KEY, "u1", "Which port does the Telegram webhook listen on?")).refused
    p, gen = _pipeline(WordReader("8443", p=0.3), gen=QuotingQueue())  # the same answer, quoted
    gen.enqueue("The webhook listens on port 8443 [C1].", confidence=0.9)
    d = p.handle(Incoming(KEY, "u2", "Which port does the Telegram webhook listen on?"))
    assert d.refused and d.refusal_reason == reasons.NOT_ANSWERED_BY_SOURCES and "answered_by_sources" in d.checks_failed
    assert d.scores["reader_best"] == 0.3 and "0.3" not in d.explanation  # the numbers stay in /why


def test_a_language_model_s_reader_settings_have_their_own_floor_and_settling() -> None:
    cfg = replace(ReaderSettings(), chunks=3, llm_min_answer_probability=0.1, llm_settle_probability=0.0, llm_chunks=5,
                  similarity_weight=0.0, llm_similarity_weight=2.0)
    assert for_mode(CoreSettings(reader=cfg), Mode.QUOTE).reader == cfg
    llm = for_mode(CoreSettings(reader=cfg), Mode.LANGUAGE_MODEL).reader
    assert llm.min_answer_probability == 0.1 and llm.settle_probability == 0.0  # every chunk it may cite is read
    assert llm.chunks == 5  # all it is given, not only the extractive generator's three
    assert llm.similarity_weight == 2.0  # the order of its context: retrieval's view still breaks near ties
    assert for_mode(CoreSettings(), Mode.QUOTE).extractive.mentioned_words  # quote-only checks stay on for quotes
    assert not for_mode(CoreSettings(), Mode.LANGUAGE_MODEL).extractive.mentioned_words  # ... and off for a model


def test_the_extractive_generator_trusts_what_the_readers_quote_floor_lets_through() -> None:
    settings = CoreSettings(reader=replace(ReaderSettings(), min_answer_probability=0.55, llm_min_answer_probability=0.1))
    gen = ExtractiveGenerator.from_settings(settings)
    assert gen.mode is Mode.QUOTE and gen.trust == 0.55 and gen.cfg == settings.extractive


def test_a_generated_claim_citing_only_chunks_that_do_not_answer_is_left_out() -> None:
    every = replace(GateSettings(), min_top1_similarity=0.3, min_mean_confidence=0.0, chunk_floor=0.0,
                    min_context_chars=40)  # all three chunks in the context
    p, gen = _pipeline(WordReader("8443"), every)  # the webhook chunk answers (0.9), the other two do not (0.05)
    gen.enqueue("Slack mentions are answered in the thread of the question, with sources listed under the answer "
                "[C3].", confidence=0.9)
    d = p.handle(Incoming(KEY, "u1", "Which port does the Telegram webhook listen on?"))
    assert d.refused and d.refusal_reason == reasons.UNSUPPORTED_CLAIMS and d.scores["reader_chunks_read"] == 3
    assert any("does not answer the question" in m for row in d.claim_map for m in row.missing)
    gen.enqueue("The Telegram webhook listens on port 8443 [C1].", confidence=0.9)
    assert not p.handle(Incoming(KEY, "u1", "Which port does the Telegram webhook listen on?")).refused


class QuestionReader:
    """A fake reader: the passages answer only a question holding `asked` and none of `off`."""

    def __init__(self, asked: str, off: str) -> None:
        self.asked, self.off = asked, off
        self.questions: list[str] = []

    def score(self, question: str, passages: Sequence[str]) -> list[float]:
        self.questions.append(question)
        answers = self.asked in question.lower() and self.off not in question.lower()
        return [0.9 if answers and self.asked in p.lower() else 0.05 for p in passages]


class Picks:
    """A term selector at its port that picks the earlier words it is told to."""

    def __init__(self, *words: str) -> None:
        self.words = set(words)

    def probabilities(self, history: Sequence[str], question: Sequence[str]) -> list[float]:
        return [0.9 if w.lower() in self.words else 0.1 for w in history]


def _conversation(reader: QuestionReader, picks: Picks) -> Pipeline:
    emb = BagOfWordsEmbedder()
    settings = CoreSettings(gates=replace(GateSettings(), min_top1_similarity=0.1, min_mean_confidence=0.0,
                                          chunk_floor=0.01, min_context_chars=20))
    return Pipeline(settings, Models(emb, QueueGenerator(), reader=reader, term_selector=picks), ListIndex(KB, emb),
                    MemoryStore())


def test_a_question_better_answered_as_typed_than_with_the_picked_words_is_read_as_typed() -> None:
    reader = QuestionReader("slack", off="telegram")
    p = _conversation(reader, Picks("telegram", "webhook"))
    p.handle(Incoming(KEY, "u1", "Which port does the Telegram webhook listen on?"))
    p.models.generator.enqueue("Mentions are answered in the thread [C1].")  # type: ignore[attr-defined]
    d = p.handle(Incoming(KEY, "u1", "Where are Slack mentions answered?"))
    assert not d.refused and d.resolution.method == "standalone" and "as typed" in d.resolution.why
    assert reader.questions[-2:] == ["Where are Slack mentions answered? Telegram webhook",
                                     "Where are Slack mentions answered?"]


def test_a_follow_up_better_answered_with_the_picked_words_keeps_them() -> None:
    reader = QuestionReader("8443", off="nothing")
    p = _conversation(reader, Picks("8443"))
    p.models.generator.enqueue("It listens on port 8443 [C1].")  # type: ignore[attr-defined]
    p.handle(Incoming(KEY, "u1", "Does the webhook listen on 8443?"))
    p.models.generator.enqueue("It rejects requests without the secret token header [C1].")  # type: ignore[attr-defined]
    d = p.handle(Incoming(KEY, "u1", "And what does it reject?"))
    assert d.resolution.method == "terms" and d.resolution.terms == ("8443",) and d.resolution.follow_up


def test_a_long_message_is_read_as_its_ask_and_a_short_one_whole() -> None:
    short = "How do I run the bot behind a proxy?"
    assert ask_view(short, 64) == short
    frames = "\n".join(f'  File "/srv/app/module_{i}.py", line {i}, in handler_{i}' for i in range(300))
    log = ("I upgraded last week and now the server will not start.\n" + frames
           + "\nValueError: invalid literal for int() with base 10: 'abc'\n"
           + "Which setting controls the port the webhook listens on?")
    asked = ask_view(log, 64)
    assert asked.startswith("I upgraded last week") and asked.endswith("the webhook listens on?")
    assert "ValueError: invalid literal" in asked and "module_5.py" not in asked
    assert len(asked.split()) <= 64 and ask_view(log, 64) == asked
    only_trace = "\n".join(f"  at handler (/srv/app/index.js:{i}:7)" for i in range(400))
    assert 0 < len(ask_view(only_trace, 64).split()) <= 64


def test_an_answer_meets_the_unprompted_bar_only_when_the_reader_is_sure() -> None:
    sure, gen = _pipeline(WordReader("8443", p=0.95))
    gen.enqueue("The webhook listens on port 8443 [C1].", confidence=0.9)
    d = sure.handle(Incoming(KEY, "u1", "Which port does the Telegram webhook listen on?"))
    assert not d.refused and d.unprompted
    unsure, gen = _pipeline(WordReader("8443", p=0.6))
    gen.enqueue("The webhook listens on port 8443 [C1].", confidence=0.9)
    d = unsure.handle(Incoming(KEY, "u1", "Which port does the Telegram webhook listen on?"))
    assert not d.refused and not d.unprompted
    assert not unsure.handle(Incoming(KEY, "u2", "Can it generate images of cats?")).unprompted
