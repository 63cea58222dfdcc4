"""What a tool call returns: a turn's decision, or the passages of a search, as the text a model
reads and as structured content a program reads (the tools' output schemas, adapters/mcp/tools.py).
A refusal is a result like an answer (reason code, explanation, suggestions), never a tool error;
a call whose arguments could not be asked is a tool error that says why, with the reason code
INPUT_REJECTED, so an agent can correct its call."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import mcp.types as types

from core.catalogue import say
from core.messages import Decision, Hit
from core.reasons import INPUT_REJECTED
from core.render import display_answer, render_text


def _text(text: str) -> list[types.ContentBlock]:
    return [types.TextContent(type="text", text=text)]


def decision_content(decision: Decision, conversation: str) -> dict[str, Any]:
    """The structured content of `ask`: the verified answer and its citations, or the refusal.
    A held answer is a refusal (NEEDS_REVIEW) until a person approves it: its draft is not shown."""
    answered = not decision.refused
    return {
        "answered": answered,
        "answer": display_answer(decision.answer) if answered else "",
        "citations": [{"number": s.number, "title": s.title, "heading": s.heading, "url": s.url,
                       "source": s.url or s.source or s.doc_id} for s in decision.sources] if answered else [],
        "warning": say("warn_note", decision.language) if answered and decision.warned else "",
        "reason": decision.refusal_reason,
        "explanation": decision.explanation if decision.refused else "",
        "message": decision.refusal_message,
        "suggestions": [s.text for s in decision.suggestions] if decision.refused else [],
        "scope": decision.scope,
        "conversation": conversation,
        "turn": decision.turn_uid,
    }


def ask_result(decision: Decision, conversation: str) -> types.CallToolResult:
    """The turn as the chat platforms render it, with the conversation to continue it by."""
    text = render_text(decision, numbered_suggestions=False) + f"\n\n(conversation: {conversation})"
    return types.CallToolResult(content=_text(text), structured_content=decision_content(decision, conversation),
                                is_error=False)


def search_result(query: str, scope: str | None, hits: Sequence[Hit]) -> types.CallToolResult:
    """The passages, best first, each with where it comes from and its similarity to the query."""
    passages: list[dict[str, Any]] = []
    blocks = []
    for n, h in enumerate(hits, start=1):
        source, score = h.url or h.source or h.doc_id, round(float(h.similarity), 4)
        passages.append({"text": h.text, "title": h.title, "heading": h.heading, "url": h.url, "source": source,
                         "score": score})
        label = " › ".join(part for part in (h.title, h.heading) if part) or source
        blocks.append(f"[{n}] {label} ({source}, score {score})\n{h.text}")
    text = "\n\n".join(blocks) if blocks else "No passage of the knowledge base was found for this query."
    return types.CallToolResult(content=_text(text), structured_content={"query": query, "scope": scope,
                                                                         "passages": passages}, is_error=False)


def refused_call(reason: str, explanation: str) -> types.CallToolResult:
    """A call nothing was asked for: a tool error with its reason code and what to do instead."""
    return types.CallToolResult(content=_text(f"Refused ({reason}): {explanation}"),
                                structured_content={"reason": reason, "explanation": explanation}, is_error=True)


def bad_arguments(problem: str) -> types.CallToolResult:
    return refused_call(INPUT_REJECTED, problem + ".")
