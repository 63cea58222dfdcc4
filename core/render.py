"""Plain-text rendering of a decision, shared by the console and chat adapters."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from core.catalogue import say
from core.messages import Decision
from core.text.citations import for_display


def refusal_in(lang: str, messages: Mapping[str, str] | None = None) -> str:
    """The refusal message in `lang`: the configured one ([refusal.messages]), else the
    catalogue's, for an adapter that must refuse without a decision (answering itself failed)."""
    return (messages or {}).get(lang) or say("refusal", lang)


def display_answer(answer: str) -> str:
    """Citations as users see them: [C2] -> [2], [C1, C3] -> [1][3], matching the numbered source list."""
    return for_display(answer)


def decision_json(decision: Decision) -> dict[str, Any]:
    """The `ask --json` shape: the decision record with `latency_ms` as the turn total."""
    d = decision.to_dict()
    stages = d.pop("latency_ms")
    d["latency_ms"] = stages.get("total", 0.0)
    d["stage_latency_ms"] = stages
    return d


def understood_line(decision: Decision) -> str:
    """One line saying how a follow-up was read: the question it was answered as, when that is a
    well-formed question (core/retrieve/resolve.py: `well_formed`), else the question it followed
    on from; "" when it was read as typed. A refusal does not say it followed on: whether the
    question leaned on the turn before or changed the topic ("What is the capital of France?"
    after one on ingesting), nothing answered it, and "following on from" would claim a link
    the sources did not confirm (`/why` keeps the reading)."""
    if decision.resolved_question and decision.resolved_question.strip() != decision.question.strip():
        return say("understood_as", decision.language, question=decision.resolved_question)
    r = decision.resolution
    if r is not None and r.follow_up and r.previous and not decision.refused:
        return say("following_on", decision.language, question=r.previous)
    return ""


def sources_lines(decision: Decision) -> list[str]:
    lines = []
    for s in decision.sources:
        label = s.title or s.doc_id
        if s.heading and s.heading != s.title:
            label += f" › {s.heading}"
        where = s.url or s.doc_id
        lines.append(f"[{s.number}] {label} ({where})")
    return lines


def render_text(decision: Decision, *, numbered_suggestions: bool = True) -> str:
    """Answer with numbered sources, or the refusal with its reason and suggestions, in the
    question's language (core/catalogue)."""
    lang = decision.language
    understood = [line for line in [understood_line(decision)] if line]
    if not decision.refused:
        parts = [*understood, display_answer(decision.answer)]
        # quotes are the sources' own words; a pruned answer says in its own last line what was left out
        if decision.warned:
            parts.append(say("warn_note", lang))
        src = sources_lines(decision)
        if src:
            parts.append(say("sources_header", lang) + "\n" + "\n".join(src))
        return "\n\n".join(parts)
    parts = [*understood, decision.refusal_message]
    if decision.explanation:
        parts.append(say("reason_line", lang, explanation=decision.explanation, code=decision.refusal_reason))
    if decision.suggestions:
        rows = [
            f"  {i}. {s.text}" if numbered_suggestions else f"  • {s.text}"
            for i, s in enumerate(decision.suggestions, start=1)
        ]
        parts.append(say("suggestions_header", lang) + "\n" + "\n".join(rows))
    return "\n\n".join(parts)


def split_message(text: str, limit: int) -> list[str]:
    """Split on paragraph, then line, then word boundaries so no piece exceeds `limit`."""
    if len(text) <= limit:
        return [text]
    pieces: list[str] = []
    buf = ""
    for para in text.split("\n\n"):
        candidate = f"{buf}\n\n{para}" if buf else para
        if len(candidate) <= limit:
            buf = candidate
            continue
        if buf:
            pieces.append(buf)
            buf = ""
        while len(para) > limit:
            cut = para.rfind("\n", 0, limit)
            if cut <= 0:
                cut = para.rfind(" ", 0, limit)
            if cut <= 0:
                cut = limit
            pieces.append(para[:cut].rstrip())
            para = para[cut:].lstrip()
        buf = para
    if buf:
        pieces.append(buf)
    return pieces
