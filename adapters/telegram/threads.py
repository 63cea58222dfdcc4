"""Which conversation a Telegram message belongs to, and whether a group message is meant for
the bot at all. A conversation is the chat, a forum topic, or a reply chain the bot started."""

from __future__ import annotations

import re
from typing import Protocol

from cachetools import LRUCache
from telegram import Message, MessageEntity, User
from telegram.constants import ChatType


class ThreadLookup(Protocol):
    """Which conversation thread a bot message belongs to."""

    def remember(self, chat_id: int, message_id: int, thread: str) -> None: ...

    def get(self, chat_id: int, message_id: int) -> str | None: ...


class ThreadMap:
    """Which conversation thread each bot message belongs to, so a reply continues it.

    Bounded and in memory: after a restart, a reply to an old message starts a new thread
    (the conversation state itself is in the transcript store).
    """

    def __init__(self, size: int = 20_000) -> None:
        self.size = size
        self._map: LRUCache[tuple[int, int], str] = LRUCache(maxsize=size)

    def remember(self, chat_id: int, message_id: int, thread: str) -> None:
        self._map[(chat_id, message_id)] = thread

    def get(self, chat_id: int, message_id: int) -> str | None:
        return self._map.get((chat_id, message_id))


def private(message: Message) -> bool:
    """Whether a message is in someone's private chat with the bot: every message there is for it,
    and there are no experts to ask."""
    return message.chat.type == ChatType.PRIVATE


def topic_id(message: Message) -> int | None:
    return message.message_thread_id if message.is_topic_message else None


def topic_thread(message: Message) -> str:
    return f"t{message.message_thread_id}" if message.is_topic_message else ""


def reply_target(message: Message) -> Message | None:
    """The message replied to; in forum topics every message 'replies' to the topic start."""
    reply = message.reply_to_message
    if reply is None or (message.is_topic_message and reply.message_id == message.message_thread_id):
        return None
    return reply


def thread_for(message: Message, threads: ThreadLookup) -> str:
    """Conversation thread: the chat (or forum topic), or the reply chain a message joins."""
    topic = topic_thread(message)
    reply = reply_target(message)
    if reply is None:
        return topic
    known = threads.get(message.chat_id, reply.message_id)
    if known is not None:
        return known
    return f"{topic}:r{reply.message_id}" if topic else f"r{reply.message_id}"


def addressed_text(message: Message, bot: User) -> str | None:
    """The question in `message`, or None when group chatter is not meant for the bot."""
    text = message.text or ""
    if private(message):
        return text
    mentions = [
        part for entity, part in message.parse_entities([MessageEntity.MENTION, MessageEntity.TEXT_MENTION]).items()
        if (entity.type == MessageEntity.MENTION and part.lower() == f"@{bot.username}".lower())
        or (entity.type == MessageEntity.TEXT_MENTION and entity.user is not None and entity.user.id == bot.id)
    ]
    reply = reply_target(message)
    to_bot = reply is not None and reply.from_user is not None and reply.from_user.id == bot.id
    if not mentions and not to_bot:
        return None
    for part in mentions:
        text = text.replace(part, " ")
    return re.sub(r"[ \t]{2,}", " ", text).strip()
