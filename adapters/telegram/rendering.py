"""What a Telegram reply looks like: plain text (no parse mode, nothing to escape) split to
Telegram's limits, and the buttons under it. Pure functions; nothing here talks to Telegram."""

from __future__ import annotations

from typing import Any

from telegram import InlineKeyboardButton, InlineKeyboardMarkup, LinkPreviewOptions
from telegram.constants import InlineKeyboardButtonLimit, MessageLimit

from core import reasons
from core.messages import Decision
from core.render import render_text, split_message

TEXT_LIMIT = int(MessageLimit.MAX_TEXT_LENGTH)  # 4096, counted by Telegram in UTF-16 code units
CALLBACK_LIMIT = int(InlineKeyboardButtonLimit.MAX_CALLBACK_DATA)  # 64 bytes
NO_PREVIEW = LinkPreviewOptions(is_disabled=True)  # source links would otherwise unfurl under every answer

HELP = (
    "I answer questions from my knowledge base, and I cite where each answer comes from. "
    "When the sources do not answer a question, I say so and suggest questions I can answer.\n\n"
    "In a private chat, just send your question. In a group, mention me, reply to one of my "
    "messages, or use /ask followed by your question.\n\n"
    "/whoami shows your Telegram user id. Admins: /reingest [path] re-ingests the knowledge base, "
    "/stats shows usage, /review lists answers waiting for review."
)


def _utf16_len(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def split_for_telegram(text: str, limit: int = TEXT_LIMIT) -> list[str]:
    """Split on paragraph boundaries into pieces Telegram accepts (it counts UTF-16 units)."""
    pieces: list[str] = []
    for piece in split_message(text, limit):
        pieces.extend([piece] if _utf16_len(piece) <= limit else split_message(piece, limit // 2))
    return [p for p in pieces if p.strip()] or [text[:limit] or "…"]


def callback_data(kind: str, *parts: object) -> str:
    """Button payloads carry ids only; Telegram rejects more than 64 bytes."""
    data = ":".join([kind, *map(str, parts)])
    if len(data.encode()) > CALLBACK_LIMIT:
        raise ValueError(f"callback data over {CALLBACK_LIMIT} bytes: {data!r}")
    return data


def parse_callback(data: str) -> tuple[str, list[str]]:
    kind, _, rest = data.partition(":")
    return kind, rest.split(":") if rest else []


def answer_text(decision: Decision, *, picked: bool = False) -> str:
    """Plain text with numbered sources; a picked suggestion repeats its question first."""
    text = render_text(decision)
    return f"› {decision.question}\n\n{text}" if picked and decision.question else text


def refusal_text(decision: Decision, *, picked: bool = False) -> str:
    """The fixed message and the reason; the suggestions go on buttons, not in the text."""
    parts = [f"› {decision.question}"] if picked and decision.question else []
    parts.append(decision.refusal_message)
    code = f"[{decision.refusal_reason}]" if decision.refusal_reason else ""
    reason = " ".join(p for p in (decision.explanation, code) if p)
    if reason:
        parts.append(f"Reason: {reason}")
    if offered(decision):
        parts.append("You could ask one of these instead:")
    return "\n\n".join(p for p in parts if p)


def failure_text(refusal_message: str, exc: BaseException) -> str:
    """What the user sees when answering itself crashed: still a refusal with a reason."""
    return (f"{refusal_message}\n\nReason: groundbot failed while answering ({type(exc).__name__}); "
            f"please try again in a moment. [{reasons.LLM_UNAVAILABLE}]")


def offered(decision: Decision) -> list[tuple[int, str]]:
    """Suggestions that can go on buttons: only stored ones have an id to carry."""
    return [(s.id, s.text) for s in decision.suggestions if s.id]


def suggestion_keyboard(decision: Decision) -> InlineKeyboardMarkup | None:
    rows = [[InlineKeyboardButton(text, callback_data=callback_data("s", sid))] for sid, text in offered(decision)]
    return InlineKeyboardMarkup(rows) if rows else None


def feedback_keyboard(turn_id: int) -> InlineKeyboardMarkup:
    return InlineKeyboardMarkup([[
        InlineKeyboardButton("👍", callback_data=callback_data("f", turn_id, 1)),
        InlineKeyboardButton("👎", callback_data=callback_data("f", turn_id, -1)),
    ]])


def decision_reply(decision: Decision, *, picked: bool) -> tuple[str, InlineKeyboardMarkup | None]:
    """The text and buttons of the reply to one decision."""
    if decision.refused:
        return refusal_text(decision, picked=picked), suggestion_keyboard(decision)
    markup = feedback_keyboard(decision.turn_id) if decision.turn_id else None
    return answer_text(decision, picked=picked), markup


def format_stats(data: dict[str, Any]) -> str:
    lines = [
        f"Turns: {data.get('turns', 0)} (answered {data.get('answered', 0)}, refused {data.get('refused', 0)})",
        f"Answer rate: {100 * float(data.get('answer_rate', 0)):.1f}%, "
        f"refusal rate: {100 * float(data.get('refusal_rate', 0)):.1f}%",
    ]
    by_reason = data.get("refusals_by_reason") or {}
    if by_reason:
        lines.append("Refusals by reason: " + ", ".join(f"{k} {v}" for k, v in by_reason.items()))
    lat = data.get("latency_ms") or {}
    if lat:
        lines.append("Latency: " + ", ".join(f"{k} {v} ms" for k, v in lat.items()))
    fb = data.get("feedback") or {}
    if fb:
        lines.append(f"Feedback: 👍 {fb.get('up', 0)}  👎 {fb.get('down', 0)}")
    idx = data.get("index") or {}
    if idx:
        lines.append(f"Index: {idx.get('chunks', 0)} chunks, embedder {idx.get('embedder', '?')}, "
                     f"version {idx.get('version', '?')}")
    return "\n".join(lines)


def review_text(rows: list[dict[str, Any]]) -> str:
    lines = [f"#{r.get('turn_id')}: {r.get('question', '')}" for r in rows]
    return "Waiting for review:\n" + "\n".join(lines) if lines else "Nothing is waiting for review."
