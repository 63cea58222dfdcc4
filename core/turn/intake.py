"""What a message must be to be asked: text with words, not binary, not empty, not too long. A
message that is not gets a clear reason and is recorded like any other turn."""

from __future__ import annotations

from core.text.normalize import clean_input, normalize_text


def vet(text: str, limit: int) -> tuple[str, str]:
    """(the question, cut to `limit` characters; why it cannot be asked, or "")."""
    raw_len = len(text)
    question = clean_input(text)
    if raw_len and len(question) < raw_len * 0.5 and raw_len > 8:
        return question[:limit], "The message looks like binary data, not a question."
    if not question:
        return "", "The message is empty; please type a question."
    if len(question) > limit:
        return question[:limit], f"The message is too long ({len(question)} characters; the limit is {limit})."
    if not normalize_text(question).strip("?!.,;:-_ ") or not any(ch.isalnum() for ch in question):
        return question, "The message has no words to search for; please type a question."
    return question, ""
