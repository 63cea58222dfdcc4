"""Typed settings core needs; bot/config.py fills them from config.toml once."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field, replace
from enum import StrEnum


@dataclass(frozen=True)
class RetrievalSettings:
    top_k: int = 5
    candidates: int = 20
    rrf_k: int = 60
    history_turns: int = 2
    max_question_chars: int = 2000
    ask_back: bool = True  # a short question the sources answer in different ways gets its readings back
    ask_back_max_words: int = 3  # ... when it has at most this many content words
    ask_back_margin: float = 0.15  # ... and the reader trusts another document's section within this of the best
    term_selector: bool = True  # a later turn reads the earlier words the term selector picks (English)
    term_threshold: float = 0.3  # ... a word at or above this probability (chosen on the conversations dev part)


@dataclass(frozen=True)
class GateSettings:
    """Thresholds on cosine similarity; they depend on the embedder (see config.toml)."""

    min_top1_similarity: float = 0.35
    min_mean_confidence: float = 0.25
    mean_top_n: int = 3
    offtopic_floor: float = 0.10
    chunk_floor: float = 0.25
    min_chunks: int = 1
    min_context_chars: int = 100
    min_keyword_coverage: float = 0.5


@dataclass(frozen=True)
class ExtractiveSettings:
    max_sentences: int = 3
    faq_min_similarity: float = 0.85
    heading_min_similarity: float = 0.85  # a question this close to a section's heading gets its opening sentences
    heading_paraphrase_similarity: float = 0.75  # ... and one this close, when no sentence shares its words, if the reader trusts that section first
    min_sentence_score: float = 0.10
    min_quote_similarity: float = 0.45
    named_terms: bool = True  # a name or number the question asks about must be in a retrieved chunk (core/generate/named_terms.py)
    mentioned_words: bool = True  # a yes/no question's words must be in some chunk of the knowledge base (core/gate/mentions.py)
    asks_when: bool = True  # a question asking when is answered only by sentences that say when (core/generate/asks_when.py)


@dataclass(frozen=True)
class JudgeSettings:
    """The claim judge (core.ports.ClaimJudge): does the evidence state each claim of a generated answer?"""

    claims: bool = True  # the claim judge (core.ports.ClaimJudge) checks every claim of a generated (LLM) answer
    min_claim_probability: float = 0.3  # a generated claim the claim judge scores below this is not covered
    threads: int = 2  # onnxruntime threads per judged answer: an LLM turn waits seconds for the model, not for CPU


@dataclass(frozen=True)
class ReaderSettings:
    """The passage reader (core.ports.PassageReader): does a retrieved chunk answer the question?
    It reorders the chunks, refuses when none answers, and the extractive generator quotes only
    from chunks it trusts; the similarity gates then only keep out what is plainly off-topic."""

    enabled: bool = True
    chunks: int = 3  # retrieved chunks read, each on its own (the extractive generator quotes only from these)
    threads: int = 2  # chunks read at once, one CPU thread each (the wait shrinks, the CPU time does not grow)
    min_answer_probability: float = 0.4  # the best chunk needs this much, else NOT_ANSWERED_BY_SOURCES
    similarity_weight: float = 0.0  # chunks are ordered by probability + this x their similarity to the question
    settle_probability: float = 0.65  # the first chunk read alone settles the question at this (0: all read)
    settle_min_similarity: float = 0.5  # ... when retrieval also placed it at least this close to the question
    settle_max_gap: float = 0.1  # ... and no other retrieved chunk is more than this closer to the question (1: no limit)
    unknown_word_probability: float = 0.6  # a question with a word no document holds, at a top-1 similarity
    unknown_word_similarity: float = 0.45  # below this, needs the best chunk this sure (core/gate/mentions.py)
    read_nearest: bool = True  # the retrieved chunk nearest the question is read even when the fused order puts it past `chunks`
    llm_min_answer_probability: float = 0.1  # the same with a language model, whose every claim is verified after
    llm_settle_probability: float = 0.0  # settle_probability with a language model (0: every chunk it may cite is read)
    llm_chunks: int = 5  # chunks read with a language model: every one it is given (`top_k`) and may cite
    llm_similarity_weight: float = 2.0  # similarity_weight with a language model: the order of the chunks it is given
    min_top1_similarity: float = 0.35  # the similarity gates' floors while the reader decides
    min_mean_confidence: float = 0.15


@dataclass(frozen=True)
class VerifySettings:
    require_citations: bool = True
    min_claim_support: float = 0.7
    min_paraphrase_probability: float = 0.7  # a claim below min_claim_support needs the claim judge this sure
    anchor_ratio: float = 0.3  # a claim's name or number must sit in a sentence this close to its best one (0 = off)
    min_citation_density: float = 0.5
    short_answer_words: int = 4
    copied_question_share: float = 0.34
    copied_answer_probability: float = 0.5
    min_source_answer_probability: float = 0.1  # a generated claim whose cited chunks the reader read all below this is not delivered
    min_generation_confidence: float = 0.5


@dataclass(frozen=True)
class ReviewSettings:
    """Risk routing (core/turn/risk.py): below template_risk reply, from it quote the evidence
    verbatim instead, from hold_risk hold the answer for a person's review."""

    template_risk: float = 0.5  # hold_risk chosen on CLAPNQ and HaluEval dev (bench/results/routing_choice.json)
    hold_risk: float = 0.6
    retry_seconds: float = 5.0  # how often a process tries reviewed answers not yet sent (bot/services/outbox.py)


@dataclass(frozen=True)
class RefusalSettings:
    messages: dict[str, str] = field(
        default_factory=lambda: {
            "en": "I can't answer that from the knowledge base I have.",
            "fa": "نمی‌توانم از روی پایگاه دانشی که دارم به این پرسش پاسخ دهم.",
        }
    )
    review_messages: dict[str, str] = field(
        default_factory=lambda: {
            "en": "Your question has been passed to an admin for review.",
            "fa": "پرسش شما برای بررسی به مدیر ارسال شد.",
        }
    )
    suggestion_floor: float = 0.3
    max_suggestions: int = 3


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
    return replace(settings, reader=reader, extractive=replace(settings.extractive, mentioned_words=False))
