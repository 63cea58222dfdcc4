"""The two tools groundbot offers over MCP, as an agent reads them in `tools/list`: their names,
the descriptions that tell it when to use which (and that a refusal is an answer, not a
failure), and each tool's contract written once as models (adapters/mcp/contract.py): its
arguments, from which its input schema and the check of a call follow, and its result, from which
its output schema follows and with which adapters/mcp/results.py builds structured content."""

from __future__ import annotations

from typing import Annotated, Any

import mcp.types as types
from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field
from pydantic_core import PydanticCustomError

from adapters.mcp.contract import Advice, Contract

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

# where a passage comes from, as a client may show it: never a path of the server's file system
Source = Annotated[str, Field(description="the document: its URL, or its path inside the knowledge base folder it "
                                          "was ingested from")]


def _not_empty(value: str | None) -> str | None:
    """An empty conversation names none: refused rather than taken as a new one the agent did not ask for."""
    if value == "":
        raise PydanticCustomError("string_too_short", "an empty string")
    return value


def _whole(value: Any) -> Any:
    """A whole number sent as one with a fraction of zero (2.0: JSON has one kind of number) is that number."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


class AskArgs(BaseModel):
    """`ask`'s arguments, as JSON values taken as they are (no text read as a number). An empty or
    overlong question is the turn's to refuse (and record), as in any chat."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    question: str = Field(description="The question, in the user's words (English or Persian).")
    conversation: Annotated[str | None, Field(max_length=MAX_CONVERSATION_CHARS), AfterValidator(_not_empty),
                            Advice("pass the one an earlier result returned, or leave it out")] = Field(
        None, description="The `conversation` of an earlier result, to ask a follow-up in it; leave it out to start "
                          "a new conversation.")


class SearchArgs(BaseModel):
    """`search`'s arguments."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    query: str = Field(description="What to look for: a question or a few words.")
    k: Annotated[int, BeforeValidator(_whole)] = Field(
        DEFAULT_K, ge=1, le=MAX_K, description=f"How many passages to return (1 to {MAX_K}, default {DEFAULT_K}).")


class Citation(BaseModel):
    """A source an answer cites."""

    number: int = Field(description="the [n] the answer cites it by")
    title: str
    heading: str
    url: str
    source: Source


class Answer(BaseModel):
    """`ask`'s result: the verified answer and its citations, or the refusal, and the conversation
    to continue."""

    answered: bool = Field(description="true: `answer` is verified against `citations`; false: refused, see `reason`")
    answer: str = Field(description="the answer with [n] citations; empty when refused")
    citations: list[Citation]
    warning: str = Field(description="a note the answer must be read with; usually empty")
    reason: str = Field(description="the refusal's reason code (docs/reason-codes.md); empty when answered")
    explanation: str = Field(description="why it was refused, in a sentence")
    message: str = Field(description="the refusal message users of this knowledge base see")
    suggestions: list[str] = Field(description="questions the knowledge base answers, offered with a refusal")
    scope: str | None = Field(None, description="the knowledge scope that answered; absent when the knowledge base "
                                                "has no scopes")
    conversation: str = Field(description="pass it back to ask a follow-up")
    turn: str = Field(description="the turn's id in groundbot's records")


class Passage(BaseModel):
    """A passage a search found, with where it comes from and its similarity to the query."""

    text: str
    title: str
    heading: str
    url: str
    source: Source
    score: float


class Passages(BaseModel):
    """`search`'s result: the passages, best first."""

    query: str
    scope: str | None = Field(None, description="the knowledge scope searched; absent when the knowledge base has "
                                                "no scopes")
    passages: list[Passage]


CONTRACTS = {c.name: c for c in (
    Contract(ASK, "Ask the knowledge base", ASK_DESCRIPTION, AskArgs, Answer,
             types.ToolAnnotations(read_only_hint=True, open_world_hint=False, idempotent_hint=False)),
    Contract(SEARCH, "Search the knowledge base", SEARCH_DESCRIPTION, SearchArgs, Passages,
             types.ToolAnnotations(read_only_hint=True, open_world_hint=False, idempotent_hint=True)),
)}
TOOLS = [c.tool() for c in CONTRACTS.values()]
INPUTS = {name: c.input_schema for name, c in CONTRACTS.items()}
OUTPUTS = {name: c.output_schema for name, c in CONTRACTS.items()}

