"""The retrieval stage's work: the question as resolved becomes one search of the index.

A follow-up is searched as the question it was resolved into (core/retrieve/resolve.py), never as
the earlier questions glued before it. When it asks something new that the heading of the section
that answered the question before does not name, and another retrieved section does ("And over
HTTP?" after the Socket Mode section), the previous section leaves the hits: the follow-up is not
answered with the previous answer again.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from core.messages import Hit, PriorTurn, section_label
from core.ports import ChunkIndex, Embedder, Rewriter
from core.retrieve.resolve import Resolution, earlier, new_terms, resolve
from core.text.language import language_of
from core.text.lexicon import content_terms
from core.text.normalize import normalize_text

MAX_REWRITE_CHARS = 400  # a rewrite longer than this (or than 4x the question) is an answer, not a question


def resolve_turn(question: str, history: Sequence[PriorTurn], scope: str | None, turns: int,
                 rewriter: Rewriter | None = None) -> Resolution:
    """The local resolver's reading, or a language model's rewrite when one is configured and its
    output passes the checks of `usable_rewrite` (else the local reading, saying why)."""
    local = resolve(question, history, scope, turns)
    prior = earlier(history, scope, turns)
    if rewriter is None or not prior:
        return local
    try:
        text = rewriter.rewrite(question, prior)
    except Exception as exc:  # a model down, slow or failing never costs the turn: the local reading stands
        return _fallback(local, f"the model's rewrite failed ({type(exc).__name__})")
    problem = usable_rewrite(question, text)
    if problem:
        return _fallback(local, f"the model's rewrite was not used: {problem}")
    text = " ".join(text.split())
    same = normalize_text(text) == normalize_text(question)
    return Resolution(question, question if same else text, follow_up=not same, method="model",
                      why="left as asked by the model" if same else "rewritten by the language model",
                      previous=prior[-1].meant, previous_section=prior[-1].section,
                      new_terms=new_terms(text, prior[-1].meant))


def usable_rewrite(question: str, text: str) -> str:
    """Why a model's rewrite cannot stand for the question ("" = it can): empty, an answer rather
    than a question (long, several lines, citations), or in another script than the question."""
    clean = " ".join((text or "").split())
    if not clean:
        return "it was empty"
    if len(clean) > min(MAX_REWRITE_CHARS, 4 * len(question) + 120) or "\n\n" in (text or "").strip():
        return f"it was {len(clean)} characters long, not a question"
    if "[C" in clean or "NOT_IN_CONTEXT" in clean:
        return "it read like an answer"
    if language_of(clean) != language_of(question):
        return "it was in another script than the question"
    return ""


def _fallback(local: Resolution, why: str) -> Resolution:
    return Resolution(local.asked, local.resolved, local.follow_up, "local-fallback", f"{why}; {local.why}",
                      local.previous, local.previous_section, local.new_terms)


def search(resolution: Resolution, embedder: Embedder, index: ChunkIndex, top_k: int,
           scope: str | None) -> tuple[str, Any, list[Hit]]:
    """(the query searched, its vector, the hits). A follow-up also searches the question before
    it, so the section that answered it is among the hits to read ("Can I mix it with English
    documents?" is answered by the same section as the question before), then set aside when the
    follow-up asks what another section says."""
    query = resolution.resolved
    norms = [normalize_text(query)]
    if resolution.follow_up and resolution.previous and resolution.previous_section:
        norms.append(normalize_text(resolution.previous))
    vectors = embedder.embed_queries(norms)
    hits = index.search(norms[0], vectors[0], top_k, scope=scope)
    if len(norms) > 1:
        seen = {h.chunk_id for h in hits}
        before = [h for h in index.search(norms[1], vectors[1], 2, scope=scope)
                  if section_of(h) == resolution.previous_section and h.chunk_id not in seen]
        hits = list(hits) + before[:1]
    return query, vectors[0], set_aside_previous(hits, resolution)


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
