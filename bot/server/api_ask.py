"""The body of `POST /api/ask` (groundbot serve): a question for a web chat widget or another
service, checked before anything is asked (bad input gets a 400 with what is wrong). An optional
"scope" names the knowledge scope that answers it (docs/scopes.md); an unknown one is a 400."""

from __future__ import annotations

import json
import uuid

from bot.scopes import ScopeError, ScopeMap
from core.messages import ConversationKey, Incoming

MAX_QUESTION_CHARS = 4000
MAX_BODY_BYTES = 1_000_000


def parse_ask(body: bytes, scopes: ScopeMap | None = None) -> Incoming | str:
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
    if scope is not None:
        if not isinstance(scope, str):
            return "'scope' must be a string"
        try:
            scope = (scopes or ScopeMap()).check(scope)
        except ScopeError as exc:
            return str(exc)
    chat = conversation or f"api-{uuid.uuid4().hex[:12]}"
    return Incoming(ConversationKey("api", chat), user or "api", question, scope=scope)
