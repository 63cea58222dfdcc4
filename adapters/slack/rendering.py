"""Block Kit rendering of groundbot decisions for Slack.

Kept apart from the Slack event handling so the layout (and Slack's size limits) can be
tested without a network: every function here is pure and returns plain dicts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from core import reasons
from core.admin_replies import REASON_LABELS, Action, Button, FeedbackReason, Reply
from core.catalogue import explain, say
from core.messages import Decision, Source
from core.render import display_answer, split_message, understood_line
from core.text.language import language_of

# Slack's published limits (Block Kit reference).
SECTION_TEXT_LIMIT = 3000
BUTTON_TEXT_LIMIT = 75
MAX_BLOCKS = 50
FALLBACK_TEXT_LIMIT = 3000

SUGGEST_ACTION_PREFIX = "groundbot_suggest_"
FEEDBACK_ACTION = "groundbot_feedback"  # Slack's feedback element; value "up:<turn id>" or "down:<turn id>"
FEEDBACK_UP = "groundbot_feedback_up"  # the buttons of answers posted before the feedback element
FEEDBACK_DOWN = "groundbot_feedback_down"
SUGGESTIONS_BLOCK = "groundbot_suggestions"
FEEDBACK_BLOCK = "groundbot_feedback"
ESCALATE_ACTION = "groundbot_escalate"  # "Ask a person"; value: the turn id
PROMPT_ACTION_PREFIX = "groundbot_prompt_"  # + its place; value: the prompt's text
PROMPT_VALUE_LIMIT = 2000  # a button value's limit
REVIEW_ACTION_PREFIX = "groundbot_review_"  # + show | approve | edit | reject | faq; value: the item id
REASON_ACTION_PREFIX = "groundbot_reason_"  # + a FeedbackReason; value: the turn id
_NOT_FLAGGED = (reasons.INPUT_REJECTED, reasons.NEEDS_REVIEW, *reasons.FAILURES)  # refusals a user cannot usefully flag

@dataclass(frozen=True)
class SlackMessage:
    """One chat.postMessage worth of content: fallback text plus blocks."""

    text: str
    blocks: list[dict[str, Any]] = field(default_factory=list)


def escape(text: str) -> str:
    """Escape the three characters Slack treats as markup in message text."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def fit(text: str, limit: int = SECTION_TEXT_LIMIT) -> list[str]:
    """Escape and split `text` so every piece fits `limit` *after* escaping.

    Splitting happens on raw text (paragraph, line, word boundaries) so a cut never lands
    inside an `&amp;` entity; a piece that grows past the limit when escaped is split again.
    """
    pieces: list[str] = []

    def add(raw: str, size: int) -> None:
        for part in split_message(raw, size):
            escaped = escape(part)
            if len(escaped) <= limit or len(part) <= 1:
                pieces.append(escaped)
            else:
                add(part, max(1, len(part) // 2))

    add(text, limit)
    return [p for p in pieces if p.strip()]


def truncate(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def section(mrkdwn: str, block_id: str | None = None) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "section", "text": {"type": "mrkdwn", "text": mrkdwn}}
    if block_id:
        block["block_id"] = block_id
    return block


def context(mrkdwn: str) -> dict[str, Any]:
    return {"type": "context", "elements": [{"type": "mrkdwn", "text": truncate(mrkdwn, SECTION_TEXT_LIMIT)}]}


def button(text: str, action_id: str, value: str) -> dict[str, Any]:
    return {"type": "button", "action_id": action_id, "value": value,
            "text": {"type": "plain_text", "text": truncate(text, BUTTON_TEXT_LIMIT), "emoji": True}}


def source_line(src: Source) -> str:
    """`3. <url|Title › Heading>`; without a URL the document id stands in for the link."""
    label = src.title or src.doc_id
    if src.heading and src.heading != src.title:
        label += f" › {src.heading}"
    label = truncate(label, 200)
    if src.url.startswith(("https://", "http://")):
        # inside <url|label> a `|` or `>` would end the label early
        shown = escape(label).replace("|", "¦")
        return f"{src.number}. <{escape(src.url)}|{shown}>"
    return f"{src.number}. {escape(label)} (`{escape(src.doc_id)}`)"


def asked_by(user_id: str, question: str) -> dict[str, Any]:
    """Context line shown above an answer to a picked suggestion, so the thread reads well."""
    return context(say("asked_by", language_of(question), user=f"<@{user_id}>", question=escape(truncate(question, 500))))


def _understood(decision: Decision) -> list[dict[str, Any]]:
    """The question a resolved follow-up was answered as, as a context line above the reply."""
    line = understood_line(decision)
    return [context(escape(line))] if line else []


def _answer_blocks(decision: Decision) -> list[dict[str, Any]]:
    blocks = _understood(decision) + [section(piece) for piece in fit(display_answer(decision.answer))]
    lang = decision.language
    if decision.warned:
        blocks.append(context(":warning: " + escape(say("warn_note", lang))))
    if decision.sources:
        lines = "\n".join(source_line(s) for s in decision.sources)
        for i, piece in enumerate(split_message(lines, SECTION_TEXT_LIMIT - 20)):
            blocks.append(section((f"*{escape(say('sources_header', lang).rstrip(':'))}*\n" if i == 0 else "") + piece))
    if decision.turn_id is not None:
        blocks.append(feedback_block(decision.turn_id, lang))
    return blocks


def feedback_block(turn_id: int, lang: str) -> dict[str, Any]:
    """Slack's own thumbs up and down under an answer (a `feedback_buttons` element in a
    `context_actions` block), their values naming the turn."""
    def choice(vote: str, key: str, emoji: str) -> dict[str, Any]:
        text = say(key, lang)
        return {"text": {"type": "plain_text", "text": truncate(f"{emoji} {text}", BUTTON_TEXT_LIMIT)},
                "accessibility_label": text, "value": f"{vote}:{turn_id}"}

    return {"type": "context_actions", "block_id": FEEDBACK_BLOCK, "elements": [{
        "type": "feedback_buttons", "action_id": FEEDBACK_ACTION,
        "positive_button": choice("up", "button_helpful", "👍"),
        "negative_button": choice("down", "button_not_helpful", "👎")}]}


def feedback_vote(action: dict[str, Any]) -> tuple[int, int] | None:
    """(turn id, +1 or -1) of a feedback press: the feedback element's "up:<id>"/"down:<id>", or
    the older buttons' action id with the turn id as value; None for a forged or stale value."""
    action_id, value = str(action.get("action_id") or ""), str(action.get("value") or "")
    if action_id == FEEDBACK_ACTION:
        vote, _, turn = value.partition(":")
        direction = {"up": 1, "down": -1}.get(vote)
    else:
        turn, direction = value, {FEEDBACK_UP: 1, FEEDBACK_DOWN: -1}.get(action_id)
    return (int(turn), direction) if direction is not None and turn.isdigit() else None


def _refusal_blocks(decision: Decision, escalate: bool = False) -> list[dict[str, Any]]:
    lang = decision.language
    blocks = _understood(decision) + [section(piece) for piece in fit(decision.refusal_message)]
    if decision.explanation or decision.refusal_reason:
        blocks.append(context(say("reason_line", lang, explanation=escape(decision.explanation),
                                  code=f"`{decision.refusal_reason}`")))
    clickable = [s for s in decision.suggestions if s.id]
    if clickable:
        blocks.append(section(escape(say("suggestions_header", lang))))
        blocks.append({"type": "actions", "block_id": SUGGESTIONS_BLOCK, "elements": [
            button(s.text, f"{SUGGEST_ACTION_PREFIX}{i}", str(s.id)) for i, s in enumerate(clickable[:5])
        ]})
    elif decision.suggestions:  # not stored (database trouble): show them, without buttons
        rows = "\n".join(f"• {escape(s.text)}" for s in decision.suggestions)
        blocks.append(section(f"{escape(say('suggestions_header', lang))}\n{rows}"))
    if decision.turn_id is not None and decision.refusal_reason not in _NOT_FLAGGED:
        elements = [button(say("should_answer_button", lang), f"{REASON_ACTION_PREFIX}{FeedbackReason.SHOULD_ANSWER}",
                           str(decision.turn_id))]
        if escalate:  # the chat's experts can be asked
            elements.append(button(say("escalate_button", lang), ESCALATE_ACTION, str(decision.turn_id)))
        blocks.append({"type": "actions", "block_id": FEEDBACK_BLOCK, "elements": elements})
    return blocks


def greeting(prompts: Sequence[str]) -> SlackMessage:
    """What someone who opens groundbot's Messages tab is greeted with: what groundbot does, and
    the suggested prompts as buttons that ask them. Slack names no language for the person, so the
    greeting speaks the language of the questions it offers (a Persian knowledge base's are Persian)."""
    lang = language_of(" ".join(prompts)) if prompts else "en"
    text = say("greeting" if prompts else "greeting_empty", lang)
    blocks = [section(escape(text))]
    if prompts:
        blocks.append({"type": "actions", "block_id": "groundbot_prompts", "elements": [
            button(p, f"{PROMPT_ACTION_PREFIX}{i}", truncate(p, PROMPT_VALUE_LIMIT)) for i, p in enumerate(prompts[:5])]})
    return SlackMessage(text, blocks)


def suggested_prompts(prompts: Sequence[str]) -> list[dict[str, str]]:
    """The prompts as assistant.threads.setSuggestedPrompts takes them (title shown, message sent)."""
    return [{"title": truncate(p, BUTTON_TEXT_LIMIT), "message": p} for p in prompts[:4]]


def render_decision(decision: Decision, *, picked_by: str = "", escalate: bool = False) -> list[SlackMessage]:
    """The Slack messages for one decision, in posting order (more than one only for long answers);
    `escalate`: a refusal offers "Ask a person" (its chat has experts)."""
    blocks = _refusal_blocks(decision, escalate) if decision.refused else _answer_blocks(decision)
    if picked_by:
        blocks.insert(0, asked_by(picked_by, decision.question))
    fallback = decision.refusal_message if decision.refused else display_answer(decision.answer)
    return chunk_blocks(blocks, fallback, decision.language)


def chunk_blocks(blocks: Sequence[dict[str, Any]], fallback: str, lang: str = "en") -> list[SlackMessage]:
    """Spread blocks over messages of at most MAX_BLOCKS; the first carries the notification text,
    the others "(continued)" in the answer's language `lang`."""
    messages: list[SlackMessage] = []
    for start in range(0, len(blocks), MAX_BLOCKS):
        part = list(blocks[start:start + MAX_BLOCKS])
        text = truncate(fallback, FALLBACK_TEXT_LIMIT) if start == 0 else say("continued", lang)
        messages.append(SlackMessage(text or "groundbot", part))
    return messages or [SlackMessage(truncate(fallback, FALLBACK_TEXT_LIMIT) or "groundbot")]


def failure_message(refusal_message: str, lang: str = "en") -> SlackMessage:
    """What the user sees when the answer could not be produced at all, in the question's
    language: still a refusal with its reason (the error itself goes to the log)."""
    why = say("reason_line", lang, explanation=escape(explain(reasons.INTERNAL_ERROR, lang)),
              code=f"`{reasons.INTERNAL_ERROR}`")
    blocks = [section(escape(refusal_message)), context(why)]
    return SlackMessage(refusal_message, blocks)


def _button_of(b: Button) -> dict[str, Any]:
    """A command-layer button: a feedback reason's, a review action's, or "Ask a person"."""
    if isinstance(b.action, FeedbackReason):
        return button(b.label, REASON_ACTION_PREFIX + b.action, str(b.item_id))
    if isinstance(b.action, Action):
        return button(b.label, REVIEW_ACTION_PREFIX + b.action, str(b.item_id))
    return button(b.label, ESCALATE_ACTION, str(b.item_id))


def reply_blocks(reply: Reply) -> list[dict[str, Any]]:
    """A command-layer reply as blocks: each section's text, its buttons in an actions block."""
    blocks: list[dict[str, Any]] = []
    for sec in reply.sections:
        blocks.extend(section(piece) for piece in fit(sec.text))
        if sec.buttons:
            blocks.append({"type": "actions", "elements": [_button_of(b) for b in sec.buttons]})
    return blocks[:MAX_BLOCKS]


# -- modals ---------------------------------------------------------------------------------
EDIT_VIEW = "groundbot_review_edit"
FEEDBACK_VIEW = "groundbot_feedback_reason"
TEXT_INPUT_LIMIT = 3000


def _input(block_id: str, label: str, *, initial: str = "", multiline: bool = True, optional: bool = False) -> dict[str, Any]:
    element: dict[str, Any] = {"type": "plain_text_input", "action_id": "value", "multiline": multiline}
    if initial:
        element["initial_value"] = truncate(initial, TEXT_INPUT_LIMIT)
    return {"type": "input", "block_id": block_id, "optional": optional, "element": element,
            "label": {"type": "plain_text", "text": truncate(label, 2000)}}


def _plain(text: str) -> dict[str, str]:
    return {"type": "plain_text", "text": truncate(text, 24)}


def edit_view(item_id: int, draft: str) -> dict[str, Any]:
    """The modal an admin edits an answer in; submitting approves the edited answer."""
    return {"type": "modal", "callback_id": EDIT_VIEW, "private_metadata": str(item_id),
            "title": _plain(say("edit_modal_title", id=item_id)), "submit": _plain(say("edit_modal_submit")),
            "blocks": [_input("answer", say("edit_modal_label"), initial=draft)]}


def feedback_view(turn_id: int, lang: str) -> dict[str, Any]:
    """The modal a thumbs-down opens: why (a reason), and optional words."""
    options = [{"text": {"type": "plain_text", "text": say(REASON_LABELS[r], lang)}, "value": str(r)}
               for r in FeedbackReason if r != FeedbackReason.SHOULD_ANSWER]
    reason = {"type": "input", "block_id": "reason", "label": {"type": "plain_text", "text": say("feedback_modal_reason", lang)},
              "element": {"type": "static_select", "action_id": "value", "options": options}}
    return {"type": "modal", "callback_id": FEEDBACK_VIEW, "private_metadata": str(turn_id),
            "title": _plain(say("feedback_modal_title", lang)), "submit": _plain(say("feedback_modal_submit", lang)),
            "blocks": [reason, _input("comment", say("feedback_modal_comment", lang), optional=True)]}


def view_value(view: dict[str, Any], block: str) -> str:
    """A submitted modal's value of one input (text, or the selected option)."""
    field = ((view.get("state") or {}).get("values") or {}).get(block, {}).get("value") or {}
    selected = field.get("selected_option") or {}
    return str(field.get("value") or selected.get("value") or "").strip()




def tag(expert: str) -> str:
    """How Slack markup tags an expert: a user group (S...) or a member."""
    return f"<!subteam^{expert}>" if expert.startswith("S") else f"<@{expert}>"
