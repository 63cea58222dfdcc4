"""Platform-neutral replies of admin, review and feedback commands, which adapters only render.

A reply is sections of text, each with optional buttons; a button names an action and the
review item it acts on (ids, never text, so they fit Telegram's 64-byte callback data).
Console prints the text and lists the buttons as commands; Telegram and Slack draw buttons.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Action(StrEnum):
    """What an admin can do with a review item."""

    SHOW = "show"
    APPROVE = "approve"
    EDIT = "edit"  # edit the answer, then approve it
    REJECT = "reject"
    FAQ = "faq"  # approve, and save the question and answer as an FAQ entry of the knowledge base


class Escalation(StrEnum):
    """"Ask a person": the turn (a button's item_id) handed to its chat's experts."""

    ASK = "escalate"


ESCALATE = Escalation.ASK


class FeedbackReason(StrEnum):
    """Why a user says an answer (or a refusal) was not right; each puts the turn in the queue."""

    WRONG = "wrong"
    UNANSWERED = "unanswered"
    SHOULD_ANSWER = "should_answer"  # a refusal that should have been an answer
    OTHER = "other"


# catalogue keys of the reasons' labels (core/catalogue)
REASON_LABELS: dict[FeedbackReason, str] = {
    FeedbackReason.WRONG: "feedback_reason_wrong",
    FeedbackReason.UNANSWERED: "feedback_reason_not_answered",
    FeedbackReason.SHOULD_ANSWER: "feedback_reason_should_answer",
    FeedbackReason.OTHER: "feedback_reason_other",
}


# what a button does: an admin's Action on a review item, a FeedbackReason given for a turn, or
# ESCALATE for a turn; each renderer tells them apart by type
ButtonAction = Action | FeedbackReason | Escalation


@dataclass(frozen=True)
class Button:
    label: str
    action: ButtonAction
    item_id: int  # the review item (or, for feedback and ESCALATE, the turn) it acts on


@dataclass(frozen=True)
class Section:
    text: str
    buttons: tuple[Button, ...] = ()


@dataclass(frozen=True)
class Reply:
    """What a command answers; `ok` is False when it was refused or failed (nothing changed)."""

    sections: tuple[Section, ...]
    ok: bool = True
    prefill: str = ""  # the text an editor starts from (a review item's draft), for platforms with a form

    @property
    def text(self) -> str:
        return "\n\n".join(s.text for s in self.sections)

    @staticmethod
    def of(text: str, ok: bool = True, buttons: tuple[Button, ...] = ()) -> Reply:
        return Reply((Section(text, buttons),), ok)
