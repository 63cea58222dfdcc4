"""What a Telegram button carries, as typed objects, and the one codec between them and the
callback data Telegram stores with the button (at most 64 bytes).

Buttons posted by earlier versions stay in chats for good, and a press can reach any worker of
`groundbot serve` or a process started since: the data must read alone, with no cache behind it.
(python-telegram-bot's `arbitrary_callback_data` keeps the objects in one process's cache, kept
over a restart only through its persistence and never seen by the other workers; and the buttons
already posted hold plain strings it would call invalid.) So each press is written as its kind's
letters and its ids ("f:12:-1"), the same letters every version has posted, and read back by the
same table.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum
from typing import Any, NamedTuple, get_type_hints

from telegram.constants import InlineKeyboardButtonLimit

from core.admin_replies import Action, FeedbackReason

CALLBACK_LIMIT = int(InlineKeyboardButtonLimit.MAX_CALLBACK_DATA)  # 64 bytes


class Kind(StrEnum):
    """The kinds of button; each value is the prefix of its callback data (kept: buttons posted
    long ago carry these letters)."""

    VOTE = "f"  # thumbs up or down under an answer
    SUGGESTION = "s"  # a suggested question under a refusal
    ESCALATE = "e"  # "Ask a person" under a refusal
    REASON = "fr"  # why a thumbs-down, or "this should be answerable"
    REVIEW = "r"  # an admin's action on a review item


# each press a typed tuple of its parts, in the order its callback data writes them
class Vote(NamedTuple):  # a thumbs up (+1) or down (-1) on a turn's answer
    turn: int
    value: int


class Pick(NamedTuple):  # a suggestion picked, by its stored id (never its text)
    suggestion: int


class Escalate(NamedTuple):  # a refused turn handed to its chat's experts
    turn: int


class Reason(NamedTuple):  # a feedback reason given for a turn
    turn: int
    reason: FeedbackReason


class Review(NamedTuple):  # an admin's action on a review item
    action: Action
    item: int


Press = Vote | Pick | Escalate | Reason | Review
KINDS: dict[type[Press], Kind] = {Vote: Kind.VOTE, Pick: Kind.SUGGESTION, Escalate: Kind.ESCALATE,
                                  Reason: Kind.REASON, Review: Kind.REVIEW}
_TYPES = {kind: cls for cls, kind in KINDS.items()}
# how each part is read back: an int, or the enum it names a member of
_READERS: dict[Kind, list[Callable[[str], Any]]] = {kind: list(get_type_hints(cls).values())
                                                       for kind, cls in _TYPES.items()}


def encode(press: Press) -> str:
    """The callback data of a button: its kind, then each part, joined by ":"."""
    data = ":".join([KINDS[type(press)], *map(str, press)])
    if len(data.encode()) > CALLBACK_LIMIT:
        raise ValueError(f"callback data over {CALLBACK_LIMIT} bytes: {data!r}")
    return data


def kind_of(data: object) -> Kind | None:
    """The kind a button's callback data names (None: not groundbot's, or not text)."""
    head = data.split(":", 1)[0] if isinstance(data, str) else ""
    return Kind(head) if head in set(Kind) else None


def decode(data: object) -> Press | None:
    """The press a button's callback data stands for; None for data of another shape (forged,
    cut short, an id that is not a number)."""
    kind = kind_of(data)
    if kind is None or not isinstance(data, str):
        return None
    cls, readers = _TYPES[kind], _READERS[kind]
    parts = data.split(":")[1:]
    if len(parts) != len(readers):
        return None
    try:
        return cls(*(read(part) for read, part in zip(readers, parts, strict=True)))
    except ValueError:
        return None


def of_kind(kind: Kind) -> Callable[[object], bool]:
    """A CallbackQueryHandler pattern: the presses of one kind (whatever their shape, so a
    malformed one reaches its handler and is told the button no longer works)."""
    return lambda data: kind_of(data) == kind
