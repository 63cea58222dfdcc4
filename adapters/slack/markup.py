"""Slack's message markup -> the question as the user typed it."""

from __future__ import annotations

import re

_MENTION = re.compile(r"<@([A-Z0-9]+)(?:\|([^>]*))?>")
_CHANNEL = re.compile(r"<#([A-Z0-9]+)(?:\|([^>]*))?>")
_SPECIAL = re.compile(r"<!([^|>]+)(?:\|([^>]*))?>")
_LINK = re.compile(r"<([^@#!|>][^|>]*)(?:\|([^>]*))?>")


def question_text(text: str, bot_user_id: str = "") -> str:
    """Slack message markup -> the question as typed: the bot's mention dropped, links unwrapped."""

    def mention(m: re.Match[str]) -> str:
        return "" if m.group(1) == bot_user_id else "@" + (m.group(2) or m.group(1))

    text = _MENTION.sub(mention, text)
    text = _CHANNEL.sub(lambda m: "#" + (m.group(2) or m.group(1)), text)
    text = _SPECIAL.sub(lambda m: "@" + (m.group(2) or m.group(1)), text)
    text = _LINK.sub(lambda m: m.group(2) or m.group(1), text)
    text = text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
    return re.sub(r"[ \t]+", " ", text).strip()


_EMOJI = re.compile(r":[a-z0-9_+'-]+:(?::skin-tone-\d:)?")


def without_emoji(text: str) -> str:
    """A message without its emoji shortcodes (":thinking_face:"), as words to read."""
    return re.sub(r"[ \t]+", " ", _EMOJI.sub(" ", text)).strip()


def as_int(value: object) -> int | None:
    """A button value or id as an int; None when it is not one (forged or stale payloads)."""
    try:
        return int(str(value))
    except (TypeError, ValueError):
        return None
