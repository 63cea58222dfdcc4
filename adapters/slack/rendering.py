"""Block Kit rendering of groundbot decisions for Slack.

Kept apart from the Slack event handling so the layout (and Slack's size limits) can be
tested without a network: every function here is pure and returns plain dicts.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from core.messages import Decision, Source
from core.render import display_answer, split_message

# Slack's published limits (Block Kit reference).
SECTION_TEXT_LIMIT = 3000
BUTTON_TEXT_LIMIT = 75
MAX_BLOCKS = 50
FALLBACK_TEXT_LIMIT = 3000

SUGGEST_ACTION_PREFIX = "groundbot_suggest_"
FEEDBACK_UP = "groundbot_feedback_up"
FEEDBACK_DOWN = "groundbot_feedback_down"
SUGGESTIONS_BLOCK = "groundbot_suggestions"
FEEDBACK_BLOCK = "groundbot_feedback"

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
    return context(f"<@{user_id}> asked: {escape(truncate(question, 500))}")


def _answer_blocks(decision: Decision) -> list[dict[str, Any]]:
    blocks = [section(piece) for piece in fit(display_answer(decision.answer))]
    if decision.status == "WARN":
        blocks.append(context(":warning: Part of this answer could not be fully matched to the sources."))
    if decision.sources:
        lines = "\n".join(source_line(s) for s in decision.sources)
        for i, piece in enumerate(split_message(lines, SECTION_TEXT_LIMIT - 20)):
            blocks.append(section(("*Sources*\n" if i == 0 else "") + piece))
    if decision.turn_id is not None:
        value = str(decision.turn_id)
        blocks.append({"type": "actions", "block_id": FEEDBACK_BLOCK, "elements": [
            button("👍 Helpful", FEEDBACK_UP, value),
            button("👎 Not helpful", FEEDBACK_DOWN, value),
        ]})
    return blocks


def _refusal_blocks(decision: Decision) -> list[dict[str, Any]]:
    blocks = [section(piece) for piece in fit(decision.refusal_message)]
    if decision.explanation or decision.refusal_reason:
        code = f" (`{decision.refusal_reason}`)" if decision.refusal_reason else ""
        blocks.append(context(f"Reason: {escape(decision.explanation)}{code}"))
    clickable = [s for s in decision.suggestions if s.id]
    if clickable:
        blocks.append(section("You could ask:"))
        blocks.append({"type": "actions", "block_id": SUGGESTIONS_BLOCK, "elements": [
            button(s.text, f"{SUGGEST_ACTION_PREFIX}{i}", str(s.id)) for i, s in enumerate(clickable[:5])
        ]})
    elif decision.suggestions:  # not stored (database trouble): show them, without buttons
        rows = "\n".join(f"• {escape(s.text)}" for s in decision.suggestions)
        blocks.append(section(f"You could ask:\n{rows}"))
    return blocks


def render_decision(decision: Decision, *, picked_by: str = "") -> list[SlackMessage]:
    """The Slack messages for one decision, in posting order (more than one only for long answers)."""
    blocks = _refusal_blocks(decision) if decision.refused else _answer_blocks(decision)
    if picked_by:
        blocks.insert(0, asked_by(picked_by, decision.question))
    fallback = decision.refusal_message if decision.refused else display_answer(decision.answer)
    return chunk_blocks(blocks, fallback)


def chunk_blocks(blocks: Sequence[dict[str, Any]], fallback: str) -> list[SlackMessage]:
    """Spread blocks over messages of at most MAX_BLOCKS; the first carries the notification text."""
    messages: list[SlackMessage] = []
    for start in range(0, len(blocks), MAX_BLOCKS):
        part = list(blocks[start:start + MAX_BLOCKS])
        text = truncate(fallback, FALLBACK_TEXT_LIMIT) if start == 0 else "(continued)"
        messages.append(SlackMessage(text or "groundbot", part))
    return messages or [SlackMessage(truncate(fallback, FALLBACK_TEXT_LIMIT) or "groundbot")]


def failure_message(refusal_message: str, detail: str) -> SlackMessage:
    """What the user sees when the answer could not be produced at all."""
    blocks = [section(escape(refusal_message)), context(f"Reason: {escape(detail)}")]
    return SlackMessage(refusal_message, blocks)


def stats_text(stats: dict[str, Any]) -> str:
    """The /groundbot-stats reply: the headline numbers, then the full record as JSON."""
    head = (f"*groundbot stats*: {stats.get('turns', 0)} turns, {stats.get('answered', 0)} answered, "
            f"{stats.get('refused', 0)} refused (answer rate {stats.get('answer_rate', 0.0):.0%}).")
    body = json.dumps(stats, indent=2, ensure_ascii=False, default=str)
    return truncate(f"{head}\n```{escape(body)}```", SECTION_TEXT_LIMIT)


def review_text(items: Sequence[dict[str, Any]]) -> str:
    """The /groundbot-review reply: answers held for an admin, oldest first."""
    if not items:
        return "No answers are waiting for review."
    rows = [f"*{len(items)} answer(s) waiting for review:*"]
    for item in items:
        rows.append(f"• #{item.get('turn_id')} {escape(truncate(str(item.get('question', '')), 200))}")
        if item.get("draft"):
            rows.append(f"    draft: {escape(truncate(display_answer(str(item['draft'])), 300))}")
    return truncate("\n".join(rows), SECTION_TEXT_LIMIT)
