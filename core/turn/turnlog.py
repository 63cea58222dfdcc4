"""Which turn is running, for every log line written while it runs.

A worker answers many conversations at once (one thread per turn), so a log line means little
without the turn and conversation it belongs to. `turn_context` holds both in context variables
for the duration of a turn; a log formatter reads them (bot/logs/setup.py), and the decision record
takes its `turn_uid` from here, so the id in the logs is the id in the transcript database.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

TURN_UID: ContextVar[str] = ContextVar("groundbot_turn_uid", default="")
CONVERSATION: ContextVar[str] = ContextVar("groundbot_conversation", default="")


@contextmanager
def turn_context(conversation: str, uid: str = "") -> Iterator[str]:
    """Mark the code in the block as one turn of `conversation`; yields the turn's uid (`uid`,
    or a new one)."""
    uid = uid or uuid.uuid4().hex
    uid_token, conv_token = TURN_UID.set(uid), CONVERSATION.set(conversation)
    try:
        yield uid
    finally:
        TURN_UID.reset(uid_token)
        CONVERSATION.reset(conv_token)


def current_turn_uid() -> str:
    """The running turn's uid, or a new one outside any turn."""
    return TURN_UID.get() or uuid.uuid4().hex


def current() -> dict[str, str]:
    """The running turn's uid and conversation key (empty outside a turn)."""
    return {"turn_uid": TURN_UID.get(), "conversation": CONVERSATION.get()}
