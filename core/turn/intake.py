"""What a message must be to be asked: text with words, not binary, not empty, not too long. A
message that is not gets a clear reason, in the asker's language, and is recorded like any other
turn."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from core import reasons
from core.catalogue import say
from core.messages import NOT_SET_UP, Incoming
from core.ports import TranscriptStore
from core.reasons import Reason
from core.text.language import language_of
from core.text.normalize import clean_input, normalize_text

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Rejection:
    """Why a message cannot be asked: the catalogue key (core/catalogue) of what its asker reads,
    with its fields."""

    key: str
    fields: dict[str, object] = field(default_factory=dict)


@dataclass(frozen=True)
class Refused:
    """A message refused before anything is searched: its reason code, what its asker reads
    ("" = the reason code's own text) and what `/why` adds."""

    reason: Reason
    explanation: str = ""
    detail: str = ""


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


def admit(msg: Incoming, store: TranscriptStore, limit: int) -> tuple[str, Refused | None]:
    """(the question, and for a message that cannot be asked why it is refused): a chat no scope
    serves reads nothing of the knowledge base; a message the adapter could not read, a picked
    suggestion that is gone and a message `vet` rejects are told so in the asker's language."""
    if msg.scope == NOT_SET_UP:
        return clean_input(msg.text)[:limit], Refused(reasons.CHAT_NOT_SET_UP)
    if msg.rejection:  # the adapter could not read it: the asker is told so, `/why` says how
        question = clean_input(msg.text)[:limit]
        return question, Refused(reasons.INPUT_REJECTED, say("input_unreadable", language_of(question)), msg.rejection)
    text = msg.text
    if msg.suggestion_id is not None:
        try:
            picked = store.suggestion_text(msg.suggestion_id)
        except Exception as exc:  # the database is away: an outage, not a message that cannot be asked
            log.error("the picked suggestion could not be read", exc_info=exc)
            return "", Refused(reasons.DATABASE_UNAVAILABLE,
                               detail=f"the transcript database could not be read ({type(exc).__name__})")
        if picked is None:
            return "", Refused(reasons.INPUT_REJECTED, say("suggestion_gone", language_of(msg.text)))
        text = picked
    question, rejection = vet(text, limit)
    if rejection is None:
        return question, None
    return question, Refused(reasons.INPUT_REJECTED, say(rejection.key, language_of(question or text), **rejection.fields))
