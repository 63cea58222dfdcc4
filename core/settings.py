"""Typed settings core needs; bot/config.py fills them from config.toml once."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field, replace
from enum import StrEnum

from core.catalogue import languages, say


def by_language(key: str) -> dict[str, str]:
    """A catalogue string in every language groundbot speaks: the default of a setting that a
    deployment may replace per language (the refusal message)."""
    return {lang: say(key, lang) for lang in languages()}


@dataclass(frozen=True)
class RetrievalSettings:
    top_k: int = 5
    """Chunks handed to gates and generator."""
    candidates: int = 20
    """Results taken from each of vector and full-text search before fusion."""
    rrf_k: int = 60
    """Reciprocal-rank-fusion constant."""
    history_turns: int = 2
    """Earlier turns of the conversation a follow-up may lean on (same knowledge scope)."""
    max_question_chars: int = 2000
    """Longer messages are refused with INPUT_REJECTED."""
    ask_back: bool = True
    """A short question the sources answer in different ways is asked back (AMBIGUOUS_QUESTION)."""
    ask_back_max_words: int = 3
    """A question is short enough to be asked back when it has at most this many content words."""
    ask_back_margin: float = 0.15
    """A question is asked back only when the reader trusts another document's section within this of the best."""
    term_selector: bool = True
    """A later turn reads the earlier words a trained term selector picks (English; models/terms.md)."""
    term_threshold: float = 0.3
    """The term selector picks each earlier word it gives at least this probability."""
    sentence_queries: int = 4
    """A message of more than 24 words is also searched by its first this many sentences, fused (0 = off)."""


@dataclass(frozen=True)
class GateSettings:
    """Thresholds on cosine similarity; they depend on the embedder (its profile, core/profiles/, sets most)."""

    min_top1_similarity: float = 0.35
    """Best chunk below this -> NO_MATCHING_SOURCE."""
    min_mean_confidence: float = 0.25
    """Mean of the top `mean_top_n` chunks below this -> LOW_CONFIDENCE."""
    mean_top_n: int = 3
    """How many top chunks the mean confidence averages."""
    offtopic_floor: float = 0.10
    """Best chunk below this -> OFF_TOPIC (nothing in the KB is even near)."""
    chunk_floor: float = 0.25
    """Chunks below this are dropped from the context."""
    min_chunks: int = 1
    """The context must hold at least this many chunks, else INSUFFICIENT_CONTEXT."""
    min_context_chars: int = 100
    """The context must hold at least this many characters, else INSUFFICIENT_CONTEXT."""
    min_keyword_coverage: float = 0.5
    """The share of the question's words the context should hold; below it the record carries a warning only."""


@dataclass(frozen=True)
class ExtractiveSettings:
    max_sentences: int = 3
    """Sentences quoted per answer."""
    faq_min_similarity: float = 0.85
    """An FAQ question this close returns its stored answer (profile)."""
    heading_min_similarity: float = 0.85
    """This close to a heading -> the section's opening (profile)."""
    heading_paraphrase_similarity: float = 0.75
    """A heading this close also opens its section when the reader trusts that section most (profile)."""
    min_sentence_score: float = 0.10
    """A sentence must share this much (idf-weighted) with the question."""
    ask_terms: int = 8
    """A sentence's share is counted against the question's this many rarest words, so a long question is not diluted."""
    min_quote_similarity: float = 0.45
    """Quote only when the best chunk is this similar (profile)."""
    mentioned_words: bool = True
    """A yes/no question with a word no document holds is refused (the mentioned_words gate)."""
    asks_when: bool = True
    """A "when" question needs a trusted chunk with a sentence that says when (the says_when gate)."""


@dataclass(frozen=True)
class JudgeSettings:
    """The claim judge (core.ports.ClaimJudge): does the evidence state each claim of a generated answer?"""

    claims: bool = True
    """When false, generated answers get the lexical checks only."""
    min_claim_probability: float = 0.3
    """A generated claim needs at least this probability."""
    threads: int = 2
    """Onnxruntime threads judging one answer's claims."""


@dataclass(frozen=True)
class ReaderSettings:
    """The passage reader (core.ports.PassageReader): does a retrieved chunk answer the question?
    It reorders the chunks, refuses when none answers, and the extractive generator quotes only
    from chunks it trusts; the similarity gates then only keep out what is plainly off-topic."""

    enabled: bool = True
    """When false, the similarity gates and thresholds decide alone."""
    chunks: int = 3
    """Retrieved chunks read per question, each alone (latency follows this)."""
    threads: int = 2
    """Chunks read at once, one CPU thread each."""
    min_answer_probability: float = 0.4
    """The best chunk needs this much; a chunk below it is not quoted from."""
    unprompted_probability: float = 0.8
    """An answer to a message nobody asked groundbot (a channel answered without a mention) is posted only when its best chunk reaches this."""
    similarity_weight: float = 0.0
    """Read chunks ordered by the reader's probability + this x their similarity."""
    settle_probability: float = 0.65
    """The first chunk read settles a question it answers this surely; 0 = read all."""
    settle_min_similarity: float = 0.5
    """A settling chunk must also be at least this close to the question."""
    settle_max_gap: float = 0.1
    """No other retrieved chunk may be more than this closer than a settling chunk; 1 means no limit."""
    unknown_word_probability: float = 0.6
    """A question worded in words no chunk holds is refused when the reader answers it below this and its best chunk is below `unknown_word_similarity` (core/gate/mentions.py)."""
    unknown_word_similarity: float = 0.45
    """The similarity below which such a question is refused with NOT_ANSWERED_BY_SOURCES (extractive)."""
    read_nearest: bool = True
    """The chunk nearest the question is read even when fusion ranks it past `chunks`."""
    llm_min_answer_probability: float = 0.1
    """The same with a language model, whose every claim is verified after."""
    llm_settle_probability: float = 0.0
    """The settle_probability with a language model, where every chunk it may cite is read."""
    llm_chunks: int = 5
    """Chunks read with a language model: all `top_k` it is given and may cite."""
    llm_similarity_weight: float = 2.0
    """The similarity_weight with a language model."""
    min_top1_similarity: float = 0.35
    """The gates' top-1 floor while the reader decides."""
    min_mean_confidence: float = 0.15
    """The gates' floor on the mean of the best chunks' similarity while the reader decides."""


@dataclass(frozen=True)
class VerifySettings:
    require_citations: bool = True
    """No [C#] in the answer -> MISSING_CITATIONS; a claim without one is left out."""
    min_claim_support: float = 0.7
    """The word-overlap support a claim needs; a claim below it is uncovered unless the claim judge gives it min_paraphrase_probability."""
    min_paraphrase_probability: float = 0.7
    """A claim short of word-overlap support is covered when the claim judge gives it at least this."""
    anchor_ratio: float = 0.3
    """Where a claim's name or number must be found (core/verify/placement.py); 0 = off."""
    min_citation_density: float = 0.5
    """Share of claims carrying a citation; below -> WARN."""
    short_answer_words: int = 4
    """Answers this short are verified together with their question."""
    copied_question_share: float = 0.34
    """A claim copied from its evidence with this share of the question is not judged."""
    copied_answer_probability: float = 0.5
    """A claim whose chunk the passage reader read as answering this surely is not judged either."""
    min_source_answer_probability: float = 0.1
    """A claim whose cited chunks the reader read below this is left out; 0 turns the check off."""
    min_generation_confidence: float = 0.5
    """Mean token probability below this -> LOW_GENERATION_CONFIDENCE."""


@dataclass(frozen=True)
class ReviewSettings:
    """Risk routing (core/turn/risk.py): below template_risk reply, from it quote the evidence
    verbatim instead, from hold_risk hold the answer for a person's review."""

    template_risk: float = 0.5
    """From this risk on, the answer is replaced by the cited evidence quoted verbatim."""
    hold_risk: float = 0.6
    """From this risk on, the answer waits for an admin's review (NEEDS_REVIEW)."""
    retry_seconds: float = 5.0
    """A reviewed answer's failed send through the outbox is retried this often (doubling)."""


@dataclass(frozen=True)
class RefusalSettings:
    messages: dict[str, str] = field(default_factory=lambda: by_language("refusal"))
    """The one refusal message, by language ([refusal.messages]): a table of language code = message."""
    review_messages: dict[str, str] = field(default_factory=lambda: by_language("held_for_review"))
    """What a held answer's asker is told, by language ([refusal.review_messages])."""
    suggestion_floor: float = 0.3
    """Suggestions must be at least this similar to the question (profile)."""
    max_suggestions: int = 3
    """At most this many suggestions per refusal."""


@dataclass(frozen=True)
class CoreSettings:
    retrieval: RetrievalSettings = field(default_factory=RetrievalSettings)
    gates: GateSettings = field(default_factory=GateSettings)
    extractive: ExtractiveSettings = field(default_factory=ExtractiveSettings)
    judge: JudgeSettings = field(default_factory=JudgeSettings)
    reader: ReaderSettings = field(default_factory=ReaderSettings)
    verify: VerifySettings = field(default_factory=VerifySettings)
    review: ReviewSettings = field(default_factory=ReviewSettings)
    refusal: RefusalSettings = field(default_factory=RefusalSettings)

    def config_hash(self) -> str:
        """Stable hash of every setting that can change a decision."""
        blob = json.dumps(asdict(self), sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


class Mode(StrEnum):
    """How a generator answers, declared by every generator (core.ports.Generator.mode): QUOTE
    copies sentences of the sources (nothing to verify after, so the reader must be surer, and a
    suggestion can be checked by answering it); LANGUAGE_MODEL writes an answer whose every claim
    is verified after (the reader reads every chunk it may cite, with a lower floor)."""

    QUOTE = "quote"
    LANGUAGE_MODEL = "language_model"


def for_mode(settings: CoreSettings, mode: Mode) -> CoreSettings:
    """The settings the stages read for a generator of this mode: the one place where the
    `[reader] llm_*` twins replace their quote-mode keys and the quote-only checks are turned off,
    so no stage asks which generator it serves."""
    if mode is Mode.QUOTE:
        return settings
    r = settings.reader
    reader = replace(r, min_answer_probability=r.llm_min_answer_probability, settle_probability=r.llm_settle_probability,
                     chunks=r.llm_chunks, similarity_weight=r.llm_similarity_weight)
    return replace(settings, reader=reader,
                   extractive=replace(settings.extractive, mentioned_words=False, asks_when=False))
