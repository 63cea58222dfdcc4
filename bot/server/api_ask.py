"""The body of `POST /api/ask` (groundbot serve): a question for a web chat widget or another
service, checked before anything is asked (bad input gets a 400 with what is wrong). An optional
"scope" names the knowledge scope that answers it (docs/scopes.md); whether the caller may ask
there is bot/server/scope_access.py's to say, and the conversation lives under the caller's key."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass

from bot.server.scope_access import ApiAccess, Caller, Refused
from core.messages import Incoming

MAX_QUESTION_CHARS = 4000
MAX_BODY_BYTES = 1_000_000


@dataclass(frozen=True)
class AskBody:
    """A well-formed body; `scope` is as sent (its name and the caller's right to it not checked yet)."""

    question: str
    conversation: str | None = None
    user: str | None = None
    scope: str | None = None


def parse_ask(body: bytes) -> AskBody | str:
    """The question of a POST /api/ask body, or what is wrong with the body."""
    if len(body) > MAX_BODY_BYTES:
        return "body too large"
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return "the body must be a JSON object"
    if not isinstance(data, dict):
        return "the body must be a JSON object"
    question, conversation, user = data.get("question"), data.get("conversation"), data.get("user")
    if not isinstance(question, str) or not question.strip():
        return "'question' must be a non-empty string"
    if len(question) > MAX_QUESTION_CHARS:
        return f"'question' is longer than {MAX_QUESTION_CHARS} characters"
    for name, value in (("conversation", conversation), ("user", user)):
        if value is not None and (not isinstance(value, str) or len(value) > 200):
            return f"'{name}' must be a string of at most 200 characters"
    scope = data.get("scope")
    if scope is not None and not isinstance(scope, str):
        return "'scope' must be a string"
    return AskBody(question, conversation, user, scope)


def incoming(access: ApiAccess, caller: Caller, body: AskBody) -> Incoming | Refused:
    """The message to answer, in the scope the caller may ask in and under its own conversation
    key; or the refusal when the body names a scope the caller does not hold."""
    chat = body.conversation or f"api-{uuid.uuid4().hex[:12]}"
    scope = access.scope_for(caller, body.scope, chat)
    if isinstance(scope, Refused):
        return scope
    return Incoming(access.key(caller, scope, chat), body.user or "api", body.question, scope=scope)
