"""The passage reader's part of a turn: read the retrieved chunks, put the chunk that answers
first, and say whether any does.

Retrieval ranks by similarity, which cannot tell a passage that answers from one that only talks
about the question; the reader (a cross-encoder trained on real questions with same-topic
passages that do not answer them) can. The gates and the generator then read the reranked order,
and the similarity gates only keep out what is plainly off-topic (core/gate/gates.py).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, replace

from core import reasons
from core.gate.chain import Scores, Verdict, refuse
from core.gate.reader_view import reader_passage, reader_question
from core.gate.verbatim import verbatim_faq, verbatim_section
from core.messages import Hit, HitKind, ReadingMethod, Resolution
from core.ports import PassageReader
from core.settings import ExtractiveSettings, ReaderSettings

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Reading:
    hits: list[Hit]  # every retrieved chunk, the ones read carrying their probability, best first
    best: float  # the highest probability of a chunk read
    answered: bool  # some chunk answers (or the question is asked as an FAQ question or a heading)
    floor: float = 0.0  # the probability a chunk needed
    read: int = 0  # chunks read: 1 when the first settled the question

    def scores(self) -> Scores:
        return {"reader_best": round(self.best, 4), "reader_chunks_read": self.read}


def answered_by_sources(reading: Reading) -> Verdict | None:
    """The gate of the reader's verdict: no chunk it read answers the question."""
    return None if reading.answered else refuse(reasons.NOT_ANSWERED_BY_SOURCES, "gate_not_answered")


def read(question: str, hits: Sequence[Hit], reader: PassageReader, cfg: ReaderSettings,
         extractive: ExtractiveSettings) -> Reading:
    """Score the first `cfg.chunks` hits and rerank them by probability plus `similarity_weight` x
    similarity (0 by default: since the chunk nearest the question is always among those read, the
    reader's own order puts the section that answers first more often; ties keep the retrieval
    order); the rest follow unread, in retrieval order. With `settle_probability`, the first hit
    is read first: when it answers that surely and retrieval placed it close to the question, the
    others are not read (a fifth of the reader's cost); otherwise the others are read too. The reader gives a chunk its probability
    whatever else it reads (core.ports.PassageReader), so settling changes which chunks are read,
    never a probability."""
    head, tail = _to_read(hits, cfg)
    views = [_view(question, h) for h in head]
    asked = reader_question(question)
    probs: list[float] = []
    if cfg.settle_probability > 0 and len(head) > 1:
        probs = reader.score(asked, views[:1])
        if _settles(probs[0], hits, cfg):
            head, tail = head[:1], head[1:] + tail
    if len(probs) < len(head):
        probs += reader.score(asked, views[len(probs):])
    scored = [replace(h, answer_probability=round(float(p), 6)) for h, p in zip(head, probs, strict=True)]
    w = cfg.similarity_weight
    order = sorted(range(len(scored)), key=lambda i: (-((scored[i].answer_probability or 0.0)
                                                        + w * scored[i].similarity), i))
    best = max(probs, default=0.0)
    ordered = [scored[i] for i in order] + tail
    return Reading(hits=ordered, best=float(best),
                   answered=best >= cfg.min_answer_probability or asked_verbatim(question, ordered, extractive, cfg.min_answer_probability),
                   floor=cfg.min_answer_probability, read=len(scored))


def read_turn(resolution: Resolution, hits: list[Hit], reader: PassageReader, cfg: ReaderSettings,
              extractive: ExtractiveSettings, pool: Executor) -> tuple[Reading | None, Resolution | None]:
    """(the reader's verdict, and the reading of the question that stands when it is not the
    turn's own); (None, None) when the reader fails (the similarity gates then decide alone).
    The words picked may be a topic the question has left ("Where is the office?" after parental
    leave): the reader also reads it as typed, at the same time (in `pool`; a reading's first
    chunk is read alone, on one core), and the reading it finds better answered stands."""
    r = resolution
    try:
        as_typed = pool.submit(read, r.asked, hits, reader, cfg, extractive) if r.method == ReadingMethod.TERMS else None
        verdict = read(r.resolved, hits, reader, cfg, extractive)
        if as_typed is None:
            return verdict, None
        typed = as_typed.result()
        if (typed.answered, typed.best) <= (verdict.answered, verdict.best):
            return verdict, None
        return typed, replace(r, resolved=r.asked, follow_up=False, method=ReadingMethod.STANDALONE,
                              why=f"better answered as typed than with {', '.join(r.terms)}")
    except Exception:
        log.exception("the passage reader failed; the similarity gates decide")
        return None, None


def read_rest(question: str, hits: Sequence[Hit], reader: PassageReader, limit: int) -> list[Hit]:
    """The first `limit` hits, each with its probability: only the ones not read yet are read (a
    chunk's probability does not depend on what else is read, so the others keep theirs)."""
    head = list(hits[:limit])
    unread = [i for i, h in enumerate(head) if h.answer_probability is None]
    if unread:
        probs = reader.score(reader_question(question), [_view(question, head[i]) for i in unread])
        for i, p in zip(unread, probs, strict=True):
            head[i] = replace(head[i], answer_probability=round(float(p), 6))
    return head


def _view(question: str, hit: Hit) -> str:
    """A chunk as the reader reads it (core/gate/reader_view.py)."""
    return reader_passage(question, hit.title, hit.heading, hit.faq_answer if hit.kind == HitKind.FAQ and hit.faq_answer else hit.text)


def _to_read(hits: Sequence[Hit], cfg: ReaderSettings) -> tuple[list[Hit], list[Hit]]:
    """(the chunks to read, the others in retrieval order): the first `cfg.chunks` of the fused
    order, the last of them swapped for the chunk nearest the question when that one ranks below
    (the full-text leg can lift chunks that share a word past the section a paraphrase asks about:
    "How do I start a chat in the console?" ranked the terminal section, its nearest, fourth)."""
    picked = list(range(min(cfg.chunks, len(hits))))
    if cfg.read_nearest and picked:
        nearest = max(range(len(hits)), key=lambda i: (hits[i].similarity, -i))
        if nearest not in picked:
            picked[-1] = nearest
    return [hits[i] for i in picked], [h for i, h in enumerate(hits) if i not in picked]


def _settles(probability: float, hits: Sequence[Hit], cfg: ReaderSettings) -> bool:
    """The reader is sure the first chunk answers, and retrieval is sure of it too: a paraphrase
    that retrieval places at a low similarity is read against the others, which may answer it
    better (the reader can be sure of a chunk retrieval is unsure of: "How do I add a new
    document...?" would settle on the scopes page, while the ingest section comes first once every
    retrieved chunk is read), and so is one whose first chunk came first by the fused ranking
    while another retrieved chunk is clearly nearer the question (`settle_max_gap`)."""
    first = hits[0]
    nearest = max(h.similarity for h in hits)
    return (probability >= cfg.settle_probability and first.similarity >= cfg.settle_min_similarity
            and nearest - first.similarity <= cfg.settle_max_gap)


def was_read(hits: Sequence[Hit]) -> bool:
    """The passage reader read these chunks (it then decided whether they answer)."""
    return any(h.answer_probability is not None for h in hits)


def trusted(hit: Hit, floor: float, read: bool) -> bool:
    """A chunk may be quoted from: without a reader every chunk may; once it read some (a question
    settled by its first chunk leaves the others unread), only the ones it read at `floor` or above."""
    return not read or (hit.answer_probability is not None and hit.answer_probability >= floor)


def asked_verbatim(question: str, hits: Sequence[Hit], cfg: ExtractiveSettings, trust: float = 0.0) -> bool:
    """The question is asked as an FAQ question or a section heading is written, by the rules the
    extractive generator quotes them by (in the reader's order, `trust` its floor): its stored
    answer or opening sentences answer it whatever else the reader says."""
    return verbatim_faq(question, hits, cfg, trust) is not None or verbatim_section(hits, cfg) is not None
