"""What a message must be to be asked: text with words, not binary, not empty, not too long. A
message that is not gets a clear reason, in the asker's language, and is recorded like any other
turn."""

from __future__ import annotations

from dataclasses import dataclass, field

from core.text.normalize import clean_input, normalize_text


@dataclass(frozen=True)
class Rejection:
    """Why a message cannot be asked: the catalogue key (core/catalogue) of what its asker reads,
    with its fields."""

    key: str
    fields: dict[str, object] = field(default_factory=dict)


def vet(text: str, limit: int) -> tuple[str, Rejection | None]:
    """(the question, cut to `limit` characters; why it cannot be asked, or None)."""
    raw_len = len(text)
    question = clean_input(text)
    if raw_len and len(question) < raw_len * 0.5 and raw_len > 8:
        return question[:limit], Rejection("input_binary")
    if not question:
        return "", Rejection("input_empty")
    if len(question) > limit:
        return question[:limit], Rejection("input_too_long", {"length": len(question), "limit": limit})
    if not normalize_text(question).strip("?!.,;:-_ ") or not any(ch.isalnum() for ch in question):
        return question, Rejection("input_no_words")
    return question, None
