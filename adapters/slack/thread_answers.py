"""What a question's thread already holds, read back from Slack: whether its answer is there,
and the question someone else asked at its root.

A worker killed after Slack accepted its answer but before it marked the question done leaves a
claim another worker takes over; answering again would post the answer twice. Every answer
carries the question's uid in Slack message metadata, so the worker taking over reads the thread
(`conversations.replies`, which needs the `*:history` scope of the conversation type) and posts
only when the answer is not there. When the thread cannot be read it answers again: a second
copy of an answer costs the user less than no answer.
"""

from __future__ import annotations

import logging
from typing import Any

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from adapters.slack.markup import question_text

log = logging.getLogger("groundbot.slack")

ANSWER_EVENT = "groundbot_answer"
MAX_PAGES = 10  # 2,000 messages of one thread; an answer older than that is not looked for


def answer_metadata(question_uid: str) -> dict[str, Any] | None:
    """The metadata every answer to a question carries (None for turns without a message uid)."""
    return {"event_type": ANSWER_EVENT, "event_payload": {"question": question_uid}} if question_uid else None


def answered_before(client: WebClient, channel: str, thread: str, question_uid: str) -> bool:
    """True when a message of `thread` carries the answer metadata of `question_uid`."""
    if not question_uid:
        return False
    try:
        pages = client.conversations_replies(channel=channel, ts=thread, include_all_metadata=True, limit=200)
        for n, page in enumerate(pages):
            if any(_answers(m, question_uid) for m in page.get("messages") or []):
                return True
            if n + 1 >= MAX_PAGES:
                break
    except SlackApiError as exc:
        log.warning("could not read thread %s in %s to see whether it was answered (%s); answering it again",
                    thread, channel, exc.response.get("error"))
    return False


def _answers(message: dict[str, Any], question_uid: str) -> bool:
    meta = message.get("metadata") or {}
    return meta.get("event_type") == ANSWER_EVENT and (meta.get("event_payload") or {}).get("question") == question_uid


def thread_question(client: WebClient, channel: str, thread: str, asker: str, own: str, bot_user_id: str) -> str:
    """What a mention inside a thread asks: the thread's question (its root, read with
    `conversations.replies`) when someone else asked it and groundbot has not answered in the
    thread yet (then the thread is already a conversation with groundbot), with the mention's own
    words after it when it has some; else the mention's own words. A root that was deleted or
    cannot be read leaves the mention's own words."""
    try:
        page = client.conversations_replies(channel=channel, ts=thread, limit=50)
    except SlackApiError as exc:
        log.warning("could not read the root of thread %s in %s (%s); answering the mention's own words",
                    thread, channel, exc.response.get("error"))
        return own
    messages = page.get("messages") or []
    if any(m.get("bot_id") or (bot_user_id and m.get("user") == bot_user_id) for m in messages):
        return own
    root = messages[0] if messages and messages[0].get("ts") == thread else {}
    author, text = str(root.get("user") or ""), question_text(str(root.get("text") or ""), bot_user_id)
    if root.get("subtype") or not author or not text or (author == asker and own):
        return own
    return f"{text}\n{own}" if own else text
