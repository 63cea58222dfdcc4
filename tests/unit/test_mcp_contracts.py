"""The MCP tools' contracts (adapters/mcp/tools.py): the schemas generated from the models are the
ones agents have read all along, portable across model providers, and a call's arguments are
checked by the same models, each bad one refused in a sentence that says what to send."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest

from adapters.mcp.contract import BadArguments
from adapters.mcp.tools import CONTRACTS, INPUTS, OUTPUTS, TOOLS, AskArgs, SearchArgs

S = {"type": "string"}
SOURCE = {"type": "string", "description": "the document: its URL, or its path inside the knowledge base folder it "
                                           "was ingested from"}
EXPECTED_INPUTS = {
    "ask": {
        "type": "object",
        "properties": {
            "question": {"type": "string", "description": "The question, in the user's words (English or Persian)."},
            "conversation": {"type": "string", "maxLength": 200,
                             "description": "The `conversation` of an earlier result, to ask a follow-up in it; "
                                            "leave it out to start a new conversation."},
        },
        "required": ["question"],
        "additionalProperties": False,
    },
    "search": {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "What to look for: a question or a few words."},
            "k": {"type": "integer", "minimum": 1, "maximum": 20, "default": 5,
                  "description": "How many passages to return (1 to 20, default 5)."},
        },
        "required": ["query"],
        "additionalProperties": False,
    },
}
EXPECTED_OUTPUTS = {
    "ask": {
        "type": "object",
        "properties": {
            "answered": {"type": "boolean", "description": "true: `answer` is verified against `citations`; "
                                                           "false: refused, see `reason`"},
            "answer": {"type": "string", "description": "the answer with [n] citations; empty when refused"},
            "citations": {"type": "array", "items": {
                "type": "object",
                "properties": {"number": {"type": "integer", "description": "the [n] the answer cites it by"},
                               "title": S, "heading": S, "url": S, "source": SOURCE},
                "required": ["number", "title", "heading", "url", "source"],
            }},
            "warning": {"type": "string", "description": "a note the answer must be read with; usually empty"},
            "reason": {"type": "string", "description": "the refusal's reason code (docs/reason-codes.md); "
                                                         "empty when answered"},
            "explanation": {"type": "string", "description": "why it was refused, in a sentence"},
            "message": {"type": "string", "description": "the refusal message users of this knowledge base see"},
            "suggestions": {"type": "array", "items": S,
                            "description": "questions the knowledge base answers, offered with a refusal"},
            "scope": {"type": "string", "description": "the knowledge scope that answered; absent when the "
                                                      "knowledge base has no scopes"},
            "conversation": {"type": "string", "description": "pass it back to ask a follow-up"},
            "turn": {"type": "string", "description": "the turn's id in groundbot's records"},
        },
        "required": ["answered", "answer", "citations", "warning", "reason", "explanation", "message",
                     "suggestions", "conversation", "turn"],
    },
    "search": {
        "type": "object",
        "properties": {
            "query": S,
            "scope": {"type": "string", "description": "the knowledge scope searched; absent when the knowledge "
                                                      "base has no scopes"},
            "passages": {"type": "array", "items": {
                "type": "object",
                "properties": {"text": S, "title": S, "heading": S, "url": S, "source": SOURCE,
                               "score": {"type": "number"}},
                "required": ["text", "title", "heading", "url", "source", "score"],
            }},
        },
        "required": ["query", "passages"],
    },
}


def test_the_schemas_generated_from_the_models_are_the_published_ones() -> None:
    assert INPUTS == EXPECTED_INPUTS and OUTPUTS == EXPECTED_OUTPUTS
    for tool in TOOLS:
        assert tool.input_schema == EXPECTED_INPUTS[tool.name] and tool.output_schema == EXPECTED_OUTPUTS[tool.name]
    assert [(t.name, t.title) for t in TOOLS] == [("ask", "Ask the knowledge base"),
                                                   ("search", "Search the knowledge base")]


def _keywords(node: Any) -> list[str]:
    """Every keyword of a schema, property names left out (a property may be called `title`)."""
    if isinstance(node, list):
        return [k for item in node for k in _keywords(item)]
    if not isinstance(node, dict):
        return []
    found = []
    for key, value in node.items():
        found.append(key)
        found += [k for sub in value.values() for k in _keywords(sub)] if key == "properties" else _keywords(value)
    return found


def test_the_schemas_are_portable() -> None:
    """One type a field (an optional one is left out, never null), no titles, nothing by reference:
    what the MCP Inspector's strict mode and every model provider read alike."""
    for schema in [*INPUTS.values(), *OUTPUTS.values()]:
        keywords = _keywords(schema)
        assert not {"anyOf", "oneOf", "allOf", "$ref", "$defs", "title"} & set(keywords), keywords
        assert "null" not in json.dumps(schema) and all(isinstance(t, str) for t in _types(schema))
        jsonschema.Draft202012Validator.check_schema(schema)


def _types(node: Any) -> list[Any]:
    if isinstance(node, list):
        return [t for item in node for t in _types(item)]
    if not isinstance(node, dict):
        return []
    own = [node["type"]] if isinstance(node.get("type"), str | list) else []
    return own + [t for value in node.values() for t in _types(value)]


@pytest.mark.parametrize(("tool", "arguments", "says"), [
    ("ask", {"question": 42}, "'question' is required and must be a string, not a number"),
    ("ask", {"question": ["a", "b"]}, "'question' is required and must be a string, not an array"),
    ("ask", {}, "'question' is required and must be a string"),
    ("ask", {"question": None}, "'question' is required and must be a string, not null"),
    ("ask", {"question": "q", "conversation": 7}, "'conversation' must be a string, not a number"),
    ("ask", {"question": "q", "conversation": "c" * 201},
     "'conversation' must be 1 to 200 characters: pass the one an earlier result returned, or leave it out"),
    ("ask", {"question": "q", "conversation": ""},
     "'conversation' must be 1 to 200 characters: pass the one an earlier result returned, or leave it out"),
    ("ask", {"question": "q", "scope": "eng"}, "ask takes no argument 'scope'; its arguments are question, conversation"),
    ("ask", {"question": "q", "_x": 1}, "ask takes no argument '_x'; its arguments are question, conversation"),
    ("ask", {"q" * 50: 1}, "ask takes no argument '" + "q" * 40 + "…'; its arguments are question, conversation"),
    ("search", {"query": {"q": 1}}, "'query' is required and must be a string, not an object"),
    ("search", {"q": "x"}, "search takes no argument 'q'; its arguments are query, k"),
    ("search", {"query": "x", "k": 0}, "'k' must be a whole number from 1 to 20; got 0"),
    ("search", {"query": "x", "k": -1}, "'k' must be a whole number from 1 to 20; got -1"),
    ("search", {"query": "x", "k": 10_000}, "'k' must be a whole number from 1 to 20; got 10000"),
    ("search", {"query": "x", "k": 10**30}, "'k' must be a whole number from 1 to 20; got a larger one"),
    ("search", {"query": "x", "k": 1e30}, "'k' must be a whole number from 1 to 20; got a larger one"),
    ("search", {"query": "x", "k": "5"}, "'k' must be a whole number from 1 to 20, not a string"),
    ("search", {"query": "x", "k": True}, "'k' must be a whole number from 1 to 20, not a boolean"),
    ("search", {"query": "x", "k": 2.5}, "'k' must be a whole number from 1 to 20, not a number"),
    ("search", {"query": "x", "k": None}, "'k' must be a whole number from 1 to 20, not null"),
])
def test_a_bad_argument_is_refused_in_a_sentence_that_says_what_to_send(tool: str, arguments: dict[str, Any],
                                                                         says: str) -> None:
    with pytest.raises(BadArguments) as refused:
        CONTRACTS[tool].parse(arguments)
    assert str(refused.value) == says


def test_good_arguments_are_read_as_the_tool_takes_them() -> None:
    assert CONTRACTS["ask"].parse({"question": "q"}) == AskArgs(question="q")
    assert CONTRACTS["ask"].parse({"question": "q", "conversation": None}) == AskArgs(question="q")  # as left out
    assert CONTRACTS["ask"].parse({"question": "", "conversation": "c" * 200}).conversation == "c" * 200
    assert CONTRACTS["search"].parse({"query": "x"}) == SearchArgs(query="x", k=5)
    found = CONTRACTS["search"].parse({"query": "x", "k": 2.0})  # JSON has one kind of number
    assert found == SearchArgs(query="x", k=2) and isinstance(found.k, int)
