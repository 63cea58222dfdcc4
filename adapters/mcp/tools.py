"""The two tools groundbot offers over MCP, as an agent reads them in `tools/list`: their names,
the descriptions that tell it when to use which (and that a refusal is an answer, not a
failure), their input and output schemas; and the arguments of a call checked against them
before anything is asked, each problem named in a sentence the agent can act on."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import mcp.types as types

ASK, SEARCH = "ask", "search"
DEFAULT_K, MAX_K = 5, 20  # passages a search returns by default, and at most
MAX_CONVERSATION_CHARS = 200  # as POST /api/ask

ASK_DESCRIPTION = (
    "Ask the team's knowledge base a question and get a verified answer. Every claim of the answer is "
    "checked against the passages it cites, and the citations (title, heading, URL) come with it. Use "
    "this when you need an answer you can rely on or quote to a user. When the sources do not answer the "
    "question, the result is a refusal with a reason code, an explanation and questions the knowledge base "
    "does answer: a refusal means the documents do not say this, not that the tool failed, so do not retry "
    "the same question; ask differently, pick a suggestion, or tell the user the documents do not cover it. "
    "To ask a follow-up in the same conversation, pass the `conversation` the previous result returned."
)
SEARCH_DESCRIPTION = (
    "Search the team's knowledge base and return the passages groundbot would read for a query (text, "
    "title, heading, URL and a similarity score from 0 to 1), best first. Nothing is answered or verified: "
    "use this when you want to read the sources yourself, to quote them or compare several; use `ask` for "
    "an answer checked against its sources. The nearest passages are returned even when none is about the "
    "query, so read their scores and text before relying on them."
)

_STRING = {"type": "string"}
# where a passage comes from, as a client may show it: never a path of the server's file system
_SOURCE = {"type": "string", "description": "the document: its URL, or its path inside the knowledge base folder "
                                            "it was ingested from"}
_CITATION = {
    "type": "object",
    "properties": {"number": {"type": "integer", "description": "the [n] the answer cites it by"},
                   "title": _STRING, "heading": _STRING, "url": _STRING,
                   "source": _SOURCE},
    "required": ["number", "title", "heading", "url", "source"],
}
ASK_INPUT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "question": {"type": "string", "description": "The question, in the user's words (English or Persian)."},
        "conversation": {"type": "string", "maxLength": MAX_CONVERSATION_CHARS,
                         "description": "The `conversation` of an earlier result, to ask a follow-up in it; "
                                        "leave it out to start a new conversation."},
    },
    "required": ["question"],
    "additionalProperties": False,
}
ASK_OUTPUT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "answered": {"type": "boolean", "description": "true: `answer` is verified against `citations`; "
                                                       "false: refused, see `reason`"},
        "answer": {"type": "string", "description": "the answer with [n] citations; empty when refused"},
        "citations": {"type": "array", "items": _CITATION},
        "warning": {"type": "string", "description": "a note the answer must be read with; usually empty"},
        "reason": {"type": "string", "description": "the refusal's reason code (docs/reason-codes.md); "
                                                     "empty when answered"},
        "explanation": {"type": "string", "description": "why it was refused, in a sentence"},
        "message": {"type": "string", "description": "the refusal message users of this knowledge base see"},
        "suggestions": {"type": "array", "items": _STRING,
                        "description": "questions the knowledge base answers, offered with a refusal"},
        "scope": {"type": "string", "description": "the knowledge scope that answered; absent when the knowledge "
                                                  "base has no scopes"},
        "conversation": {"type": "string", "description": "pass it back to ask a follow-up"},
        "turn": {"type": "string", "description": "the turn's id in groundbot's records"},
    },
    "required": ["answered", "answer", "citations", "warning", "reason", "explanation", "message", "suggestions",
                 "conversation", "turn"],
}
SEARCH_INPUT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "description": "What to look for: a question or a few words."},
        "k": {"type": "integer", "minimum": 1, "maximum": MAX_K, "default": DEFAULT_K,
              "description": f"How many passages to return (1 to {MAX_K}, default {DEFAULT_K})."},
    },
    "required": ["query"],
    "additionalProperties": False,
}
SEARCH_OUTPUT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": _STRING,
        "scope": {"type": "string", "description": "the knowledge scope searched; absent when the knowledge base "
                                                  "has no scopes"},
        "passages": {"type": "array", "items": {
            "type": "object",
            "properties": {"text": _STRING, "title": _STRING, "heading": _STRING, "url": _STRING,
                           "source": _SOURCE, "score": {"type": "number"}},
            "required": ["text", "title", "heading", "url", "source", "score"],
        }},
    },
    "required": ["query", "passages"],
}

TOOLS = [
    types.Tool(name=ASK, title="Ask the knowledge base", description=ASK_DESCRIPTION, input_schema=ASK_INPUT,
               output_schema=ASK_OUTPUT,
               annotations=types.ToolAnnotations(read_only_hint=True, open_world_hint=False, idempotent_hint=False)),
    types.Tool(name=SEARCH, title="Search the knowledge base", description=SEARCH_DESCRIPTION,
               input_schema=SEARCH_INPUT, output_schema=SEARCH_OUTPUT,
               annotations=types.ToolAnnotations(read_only_hint=True, open_world_hint=False, idempotent_hint=True)),
]
INPUTS = {ASK: ASK_INPUT, SEARCH: SEARCH_INPUT}
OUTPUTS = {ASK: ASK_OUTPUT, SEARCH: SEARCH_OUTPUT}


class BadArguments(ValueError):
    """A call's arguments do not fit the tool's input schema; the message says what to send instead."""


@dataclass(frozen=True)
class AskArgs:
    question: str
    conversation: str | None = None


@dataclass(frozen=True)
class SearchArgs:
    query: str
    k: int = DEFAULT_K


def _kind(value: Any) -> str:
    """A JSON value's type as an agent would name it (never the value: it may be long, or anything)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "an array" if isinstance(value, list) else "an object" if isinstance(value, dict) else type(value).__name__


def _only(tool: str, arguments: Mapping[str, Any]) -> None:
    known = list(INPUTS[tool]["properties"])
    for name in arguments:
        if name not in known:
            shown = name if len(name) <= 40 else name[:40] + "…"
            raise BadArguments(f"{tool} takes no argument {shown!r}; its arguments are {', '.join(known)}")


def ask_args(arguments: Mapping[str, Any]) -> AskArgs:
    """`ask`'s arguments; BadArguments when one is missing, of the wrong type or unknown. An empty or
    overlong question is the turn's to refuse (and record), as in any chat."""
    _only(ASK, arguments)
    question, conversation = arguments.get("question"), arguments.get("conversation")
    if not isinstance(question, str):
        raise BadArguments("'question' is required and must be a string"
                           + ("" if "question" not in arguments else f", not {_kind(question)}"))
    if conversation is not None and not isinstance(conversation, str):
        raise BadArguments(f"'conversation' must be a string, not {_kind(conversation)}")
    if conversation is not None and not 0 < len(conversation) <= MAX_CONVERSATION_CHARS:
        raise BadArguments(f"'conversation' must be 1 to {MAX_CONVERSATION_CHARS} characters: "
                           "pass the one an earlier result returned, or leave it out")
    return AskArgs(question, conversation)


def search_args(arguments: Mapping[str, Any]) -> SearchArgs:
    """`search`'s arguments; BadArguments when the query is not a string or k is not a whole
    number from 1 to MAX_K."""
    _only(SEARCH, arguments)
    query, k = arguments.get("query"), arguments.get("k", DEFAULT_K)
    if not isinstance(query, str):
        raise BadArguments("'query' is required and must be a string"
                           + ("" if "query" not in arguments else f", not {_kind(query)}"))
    if isinstance(k, float) and k.is_integer():
        k = int(k)
    if isinstance(k, bool) or not isinstance(k, int):
        raise BadArguments(f"'k' must be a whole number from 1 to {MAX_K}, not {_kind(k)}")
    if not 1 <= k <= MAX_K:
        raise BadArguments(f"'k' must be a whole number from 1 to {MAX_K}; got {k if abs(k) < 10**12 else 'a larger one'}")
    return SearchArgs(query, k)
