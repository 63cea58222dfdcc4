"""What a Telegram reply looks like: plain text (no parse mode, nothing to escape) split to
Telegram's limits, and the buttons under it. Pure functions; nothing here talks to Telegram."""

from __future__ import annotations

from collections.abc import Mapping

from telegram import InlineKeyboardButton, InlineKeyboardMarkup, LinkPreviewOptions
from telegram.constants import MessageLimit

from adapters.telegram.callbacks import Escalate, Pick, Press, Reason, Review, Vote, encode
from core import reasons
from core.admin_replies import Action, Button, FeedbackReason, Reply
from core.catalogue import explain, say
from core.messages import Decision
from core.render import refusal_in, render_text, split_message, understood_line

TEXT_LIMIT = int(MessageLimit.MAX_TEXT_LENGTH)  # 4096, counted by Telegram in UTF-16 code units
NO_PREVIEW = LinkPreviewOptions(is_disabled=True)  # source links would otherwise unfurl under every answer

HELP_KEY = "telegram_help"  # core/catalogue


def _utf16_len(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def split_for_telegram(text: str, limit: int = TEXT_LIMIT) -> list[str]:
    """Split on paragraph boundaries into pieces Telegram accepts (it counts UTF-16 units)."""
    pieces: list[str] = []
    for piece in split_message(text, limit):
        pieces.extend([piece] if _utf16_len(piece) <= limit else split_message(piece, limit // 2))
    return [p for p in pieces if p.strip()] or [text[:limit] or "…"]


def key(label: str, press: Press) -> InlineKeyboardButton:
    """A button: its label, and what a press carries (ids only, adapters/telegram/callbacks.py)."""
    return InlineKeyboardButton(label, callback_data=encode(press))


def answer_text(decision: Decision, *, picked: bool = False) -> str:
    """Plain text with numbered sources; a picked suggestion repeats its question first."""
    text = render_text(decision)
    return f"› {decision.question}\n\n{text}" if picked and decision.question else text


def refusal_text(decision: Decision, *, picked: bool = False) -> str:
    """The fixed message and the reason; the suggestions go on buttons, not in the text."""
    parts = [f"› {decision.question}"] if picked and decision.question else []
    parts += [understood_line(decision), decision.refusal_message]
    if decision.explanation or decision.refusal_reason:
        parts.append(say("reason_line", decision.language, explanation=decision.explanation,
                         code=decision.refusal_reason))
    if offered(decision):
        parts.append(say("suggestions_buttons_header", decision.language))
    return "\n\n".join(p for p in parts if p)


def failure_text(refusal_messages: Mapping[str, str], lang: str) -> str:
    """What the user sees when answering itself crashed: still a refusal with a reason, in the
    question's language (the error itself goes to the log, not to the user)."""
    why = say("reason_line", lang, explanation=explain(reasons.INTERNAL_ERROR, lang), code=reasons.INTERNAL_ERROR)
    return f"{refusal_in(lang, refusal_messages)}\n\n{why}"


def offered(decision: Decision) -> list[tuple[int, str]]:
    """Suggestions that can go on buttons: only stored ones have an id to carry."""
    return [(s.id, s.text) for s in decision.suggestions if s.id]


# refusals a user cannot usefully flag: bad input, and a draft already waiting for a person
_NOT_FLAGGED = (reasons.INPUT_REJECTED, reasons.NEEDS_REVIEW, *reasons.FAILURES)


def suggestion_keyboard(decision: Decision, escalate: bool = False) -> InlineKeyboardMarkup | None:
    """Suggestions, one per row, "this should be answerable" (it puts the turn in the queue) and,
    where the chat has experts (`escalate`), "Ask a person"."""
    rows = [[key(text, Pick(sid))] for sid, text in offered(decision)]
    if decision.turn_id and decision.refusal_reason not in _NOT_FLAGGED:
        rows.append([key(say("should_answer_button", decision.language),
                         Reason(decision.turn_id, FeedbackReason.SHOULD_ANSWER))])
        if escalate:
            rows.append([key(say("escalate_button", decision.language), Escalate(decision.turn_id))])
    return InlineKeyboardMarkup(rows) if rows else None


def feedback_keyboard(turn_id: int) -> InlineKeyboardMarkup:
    return InlineKeyboardMarkup([[key("👍", Vote(turn_id, 1)), key("👎", Vote(turn_id, -1))]])


def decision_reply(decision: Decision, *, picked: bool, escalate: bool = False) -> tuple[str, InlineKeyboardMarkup | None]:
    """The text and buttons of the reply to one decision."""
    if decision.refused:
        return refusal_text(decision, picked=picked), suggestion_keyboard(decision, escalate)
    markup = feedback_keyboard(decision.turn_id) if decision.turn_id else None
    return answer_text(decision, picked=picked), markup


def button_press(b: Button) -> Press:
    """What a command-layer button carries when pressed: a feedback reason for a turn, an admin's
    review action on an item, or "Ask a person" for a turn."""
    if isinstance(b.action, FeedbackReason):
        return Reason(b.item_id, b.action)
    if isinstance(b.action, Action):
        return Review(b.action, b.item_id)
    return Escalate(b.item_id)


def reply_messages(reply: Reply) -> list[tuple[str, InlineKeyboardMarkup | None]]:
    """A command's reply as messages: text runs together until a section with buttons, which
    ends its message (so each queue item carries its own buttons)."""
    out: list[tuple[str, InlineKeyboardMarkup | None]] = []
    texts: list[str] = []
    for section in reply.sections:
        texts.append(section.text)
        if section.buttons:
            row = [key(b.label, button_press(b)) for b in section.buttons]
            out.append(("\n\n".join(texts), InlineKeyboardMarkup([row[:3], row[3:]] if len(row) > 3 else [row])))
            texts = []
    if texts:
        out.append(("\n\n".join(texts), None))
    return out
