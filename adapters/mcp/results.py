"""What a tool call returns: a turn's decision, or the passages of a search, as the text a model
reads and as structured content a program reads, built with the tools' result models
(adapters/mcp/tools.py, from which their output schemas are generated), that structured content
also given as JSON text for clients that read text blocks only (the MCP specification's SHOULD for
structured results).

A refusal is a result like an answer (reason code, explanation, suggestions), never a tool error.
A call nothing could be asked for (arguments that do not fit the tool, a caller no scope serves) is
a tool error: its text names the reason code and says what to send instead, and it carries no
structured content, since the output schema describes a result and a client checks structured
content against it. A document is named by its URL or its path inside the knowledge base folder,
never by where the file lies on the server."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import mcp.types as types
from pydantic import BaseModel

from adapters.mcp.tools import Answer, Citation, Passage, Passages
from core.catalogue import say
from core.messages import Decision, Hit, Source
from core.reasons import INPUT_REJECTED
from core.render import display_answer, render_text


def _blocks(text: str, structured: dict[str, Any] | None = None) -> list[types.ContentBlock]:
    blocks: list[types.ContentBlock] = [types.TextContent(type="text", text=text)]
    if structured is not None:
        blocks.append(types.TextContent(type="text", text=json.dumps(structured, ensure_ascii=False)))
    return blocks


def where(item: Hit | Source) -> str:
    """The document as a client may show it: its URL, else its id (the path inside the folder it was
    ingested from, as `kb/hr/leave.md`); the server's own path of the file is never sent."""
    return item.url or item.doc_id


def _content(result: BaseModel) -> dict[str, Any]:
    """A result model as structured content: a field with no value (the scope, without scopes) is
    left out, not null: a schema without null types reads the same on every model provider."""
    return result.model_dump(mode="json", exclude_none=True)


def decision_content(decision: Decision, conversation: str) -> dict[str, Any]:
    """The structured content of `ask`: the verified answer and its citations, or the refusal.
    A held answer is a refusal (NEEDS_REVIEW) until a person approves it: its draft is not shown."""
    answered = not decision.refused
    return _content(Answer(
        answered=answered,
        answer=display_answer(decision.answer) if answered else "",
        citations=[Citation(number=s.number, title=s.title, heading=s.heading, url=s.url, source=where(s))
                   for s in decision.sources] if answered else [],
        warning=say("warn_note", decision.language) if answered and decision.warned else "",
        reason=decision.refusal_reason,
        explanation=decision.explanation if decision.refused else "",
        message=decision.refusal_message,
        suggestions=[s.text for s in decision.suggestions] if decision.refused else [],
        scope=decision.scope,
        conversation=conversation,
        turn=decision.turn_uid,
    ))


def ask_result(decision: Decision, conversation: str) -> types.CallToolResult:
    """The turn as the chat platforms render it, with the conversation to continue it by."""
    text = render_text(decision, numbered_suggestions=False) + f"\n\n(conversation: {conversation})"
    content = decision_content(decision, conversation)
    return types.CallToolResult(content=_blocks(text, content), structured_content=content, is_error=False)


def search_result(query: str, scope: str | None, hits: Sequence[Hit]) -> types.CallToolResult:
    """The passages, best first, each with where it comes from and its similarity to the query."""
    passages: list[Passage] = []
    blocks = []
    for n, h in enumerate(hits, start=1):
        source, score = where(h), round(float(h.similarity), 4)
        passages.append(Passage(text=h.text, title=h.title, heading=h.heading, url=h.url, source=source, score=score))
        label = " › ".join(part for part in (h.title, h.heading) if part) or source
        blocks.append(f"[{n}] {label} ({source}, score {score})\n{h.text}")
    text = "\n\n".join(blocks) if blocks else "No passage of the knowledge base was found for this query."
    content = _content(Passages(query=query, scope=scope, passages=passages))
    return types.CallToolResult(content=_blocks(text, content), structured_content=content, is_error=False)


def refused_call(reason: str, explanation: str) -> types.CallToolResult:
    """A call nothing was asked for: a tool error whose text gives its reason code and what to do
    instead; no structured content (there is no result for the output schema to describe)."""
    return types.CallToolResult(content=_blocks(f"Refused ({reason}): {explanation}"), is_error=True)


def bad_arguments(problem: str) -> types.CallToolResult:
    return refused_call(INPUT_REJECTED, problem + ".")
