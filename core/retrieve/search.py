"""The retrieval stage's work: the question, read in its conversation, becomes the searches of the index.

A later turn is searched three ways at once, and the result lists are fused by reciprocal rank
(as the index fuses its vector and full-text legs): the question as asked, the question with the
earlier words the term selector picked (core/retrieve/resolve.py), and the question glued after
the one before it; a language model's rewrite, where one is configured and usable, is one more
search. No one reading decides what is found. A later question the selector finds standing on
its own (it needs no earlier word) is searched as asked, as a first question is: the glued
search changed no figure of the conversations suite's dev parts there, and cost a search. When
the follow-up asks something new that the heading of the section that answered the question
before does not name, and another retrieved section does ("And over HTTP?" after the Socket Mode
section), the previous section leaves the hits: the follow-up is not answered with the previous
answer again.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Executor, Future
from dataclasses import dataclass, field, replace
from typing import Any

from core.messages import Hit, PriorTurn, ReadingMethod, section_label
from core.ports import ChunkIndex, Embedder, Rewriter, TermSelector
from core.retrieve.fusion import reciprocal_ranks
from core.retrieve.resolve import PASSED, Check, Resolution, failed, new_terms, resolve, well_formed
from core.text.language import language_of
from core.text.lexicon import content_terms
from core.text.normalize import normalize_text
from core.text.sentences import split_sentences


@dataclass(frozen=True)
class Retrieved:
    """What the retrieve stage found, as far as it got (an index that cannot be searched stops it
    part way): the index version searched, the reading of the question, the query the gates read,
    its vector and the hits."""

    index_version: str = ""
    resolution: Resolution | None = None
    query: str = ""
    vector: Any = None  # the query's embedding (numpy), which a refusal's suggestions are found near
    hits: list[Hit] = field(default_factory=list)


MAX_REWRITE_CHARS = 400  # a rewrite longer than this (or than 4x the question) is an answer, not a question


def resolve_turn(question: str, prior: Sequence[PriorTurn], rewriter: Rewriter | None = None,
                 selector: TermSelector | None = None, threshold: float = 0.5) -> Resolution:
    """The question read with `prior`, the earlier turns it may lean on (core/retrieve/resolve.py:
    `earlier`, taken once per turn by the caller): the local reading (the term selector's), or a
    language model's rewrite when one is configured and its output passes the checks of
    `usable_rewrite` (else the local reading, saying why). The rewrite is shown to the user only
    when it is `well_formed`."""
    local = resolve(question, prior, selector, threshold)
    if rewriter is None or not prior:
        return local
    try:
        text = rewriter.rewrite(question, prior)
    except Exception as exc:  # a model down, slow or failing never costs the turn: the local reading stands
        return _fallback(local, f"the model's rewrite failed ({type(exc).__name__})")
    usable = usable_rewrite(question, text)
    if not usable:
        return _fallback(local, f"the model's rewrite was not used: {usable.why}")
    text = " ".join(text.split())
    same = normalize_text(text) == normalize_text(question)
    shown = text if not same and well_formed(text, question) else ""
    return replace(local, resolved=question if same else text, follow_up=not same, method=ReadingMethod.MODEL,
                   why="left as asked by the model" if same else "rewritten by the language model",
                   new_terms=new_terms(text, prior[-1].question), shown=shown)


def usable_rewrite(question: str, text: str) -> Check:
    """Whether a model's rewrite can stand for the question; not when it is empty, an answer
    rather than a question (long, several lines, citations), or in another script than the question."""
    clean = " ".join((text or "").split())
    if not clean:
        return failed("it was empty")
    if len(clean) > min(MAX_REWRITE_CHARS, 4 * len(question) + 120) or "\n\n" in (text or "").strip():
        return failed(f"it was {len(clean)} characters long, not a question")
    if "[C" in clean or "NOT_IN_CONTEXT" in clean:
        return failed("it read like an answer")
    if language_of(clean) != language_of(question):
        return failed("it was in another script than the question")
    return PASSED


def _fallback(local: Resolution, why: str) -> Resolution:
    return replace(local, method=local.method.fallback, why=f"{why}; {local.why}")


def queries(resolution: Resolution, sentences: int = 0) -> list[str]:
    """What is searched, first the reading every stage reads: the question as asked, the
    question with the selected words, the question glued after the one before (each once); a
    question the selector found needing no earlier word, as asked alone. A long message (what the
    asker tried, an error line, then the ask) is also searched sentence by sentence, its first
    `sentences` sentences of a few words each, so the ask is not drowned by the rest."""
    if resolution.method == ReadingMethod.STANDALONE:
        texts = [resolution.asked]
    else:
        texts = [resolution.resolved, resolution.asked, resolution.leaning]
    return _once(texts + _sentences(resolution.asked, sentences))


LONG_WORDS = 24  # a message longer than this is searched sentence by sentence too (the reader's question window)
SENTENCE_WORDS = 3  # ... each sentence of at least this many words


def _sentences(text: str, most: int) -> list[str]:
    """The sentences of a long message, each a query of its own (none for a short one)."""
    if most <= 0 or len(text.split()) <= LONG_WORDS:
        return []
    parts = [s for s in split_sentences(text) if len(s.split()) >= SENTENCE_WORDS]
    return parts[:most] if len(parts) > 1 else []


def _once(texts: Sequence[str]) -> list[str]:
    return [q for q in dict.fromkeys(" ".join(q.split()) for q in texts) if q]


Searched = Future[tuple[Any, list[Hit]]]  # one query's (vector, hits)


def start_searches(texts: Sequence[str], embedder: Embedder, index: ChunkIndex, top_k: int, scope: str | None,
                   pool: Executor) -> dict[str, Searched]:
    """The searches a later turn makes whatever its reading (the question as asked), begun on
    `pool` before the reading is known: the term selector, or a language model's rewrite, runs
    while they embed and search. `search` takes them up by text and starts the others."""
    return {q: pool.submit(_search_one, normalize_text(q), embedder, index, top_k, scope) for q in _once(texts)}


def _search_one(norm: str, embedder: Embedder, index: ChunkIndex, top_k: int,
                scope: str | None) -> tuple[Any, list[Hit]]:
    vector = embedder.embed_queries([norm])[0]
    return vector, index.search(norm, vector, top_k, scope=scope)


def search(resolution: Resolution, embedder: Embedder, index: ChunkIndex, top_k: int,
           scope: str | None, rrf_k: int = 60, pool: Executor | None = None,
           started: dict[str, Searched] | None = None, sentences: int = 0) -> tuple[str, Any, list[Hit]]:
    """(the query the stages read, its vector, the hits): every query of `queries` searched (those
    `started` already taken up; the others at once on `pool`, when given: the index's searches
    wait on LanceDB, not on Python), the result lists fused by reciprocal rank (each hit keeping
    its best cosine to any of them), then the previous section set aside when the follow-up asks
    what another section says."""
    texts = queries(resolution, sentences)
    started = started or {}
    if pool is not None and len(texts) > 1:
        for q in texts:
            if q not in started:
                started[q] = pool.submit(_search_one, normalize_text(q), embedder, index, top_k, scope)
    if all(q in started for q in texts):
        results = [started[q].result() for q in texts]
        vectors, lists = [v for v, _ in results], [h for _, h in results]
    else:
        norms = [normalize_text(q) for q in texts]
        vectors = list(embedder.embed_queries(norms))
        lists = [index.search(norm, vectors[i], top_k, scope=scope) for i, norm in enumerate(norms)]
    hits = lists[0] if len(lists) == 1 else fuse_lists(lists, top_k, rrf_k)
    return texts[0], vectors[0], set_aside_previous(hits, resolution)


def fuse_lists(lists: Sequence[Sequence[Hit]], k: int, rrf_k: int) -> list[Hit]:
    """The top `k` hits by reciprocal rank over several searches; a hit keeps its best cosine and
    heading similarity over them, and its full-text rank where it had one."""
    best: dict[str, Hit] = {}
    score = reciprocal_ranks(([h.chunk_id for h in hits] for hits in lists), rrf_k)
    for hits in lists:
        for h in hits:
            seen = best.get(h.chunk_id)
            if seen is None:
                best[h.chunk_id] = h
                continue
            ranks = [r for r in (seen.keyword_rank, h.keyword_rank) if r is not None]
            best[h.chunk_id] = replace(seen, similarity=max(seen.similarity, h.similarity),
                                       heading_similarity=max(seen.heading_similarity, h.heading_similarity),
                                       keyword_rank=min(ranks) if ranks else None)
    ordered = sorted(best, key=lambda c: (-score[c], -best[c].similarity, c))[:k]
    return [replace(best[c], fused=round(score[c], 6)) for c in ordered]


def section_of(hit: Hit) -> str:
    """A hit's section as the record keeps it ("title > heading")."""
    return section_label(hit.title, hit.heading)


def set_aside_previous(hits: Sequence[Hit], resolution: Resolution) -> list[Hit]:
    """The hits without the section that answered the question before, when the follow-up asks
    about words its heading does not hold and another hit holds one of them: "And over HTTP?" is
    not answered with the Socket Mode section again, while "And what does it cost?" keeps a
    section that says so when nothing else does."""
    if not (resolution.follow_up and resolution.previous_section and resolution.new_terms):
        return list(hits)
    asked = set(resolution.new_terms)
    previous = [h for h in hits if section_of(h) == resolution.previous_section]
    others = [h for h in hits if section_of(h) != resolution.previous_section]
    if not previous or asked & set(content_terms(previous[0].heading)):
        return list(hits)
    if not any(asked & set(content_terms(f"{h.heading} {h.text}")) for h in others):
        return list(hits)
    return others
