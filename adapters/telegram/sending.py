"""Sending: a reply in pieces Telegram accepts, "typing…" while the pipeline works, and a
status message edited in place. Failures of the cosmetic parts are only logged."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from collections.abc import AsyncIterator, Sequence

from telegram import Bot, ForceReply, InlineKeyboardMarkup, Message, MessageEntity, ReplyParameters
from telegram.constants import ChatAction, ChatType
from telegram.error import TelegramError

from adapters.telegram.rendering import NO_PREVIEW, split_for_telegram
from adapters.telegram.threads import ThreadLookup, topic_id
from core.catalogue import say_each

log = logging.getLogger(__name__)

TYPING_EVERY_S = 4.0  # a chat action shows for about 5 s, a draft for 30 s; the next step every 4 s


class Replies:
    """Everything the bot sends goes through here, so each piece is remembered in its thread."""

    def __init__(self, bot: Bot, threads: ThreadLookup) -> None:
        self.bot = bot
        self.threads = threads
        self.drafts = True  # False once Telegram refused a draft (an older Bot API server): typing instead

    async def send(self, anchor: Message, text: str, markup: InlineKeyboardMarkup | None = None,
                   thread: str | None = None, entities: Sequence[MessageEntity] | None = None) -> list[Message]:
        """Send `text` in pieces of at most 4096; buttons go under the last piece, `entities`
        (mentions of people by id) on the first.

        In groups the first piece replies to `anchor`, so the exchange reads as a thread.
        """
        pieces = split_for_telegram(text)
        reply = None if anchor.chat.type == ChatType.PRIVATE else ReplyParameters(
            anchor.message_id, allow_sending_without_reply=True)
        sent: list[Message] = []
        for i, piece in enumerate(pieces):
            msg = await self.bot.send_message(
                chat_id=anchor.chat_id, text=piece, message_thread_id=topic_id(anchor),
                reply_markup=markup if i == len(pieces) - 1 else None,
                reply_parameters=reply if i == 0 else None, link_preview_options=NO_PREVIEW,
                entities=entities if i == 0 else None,
            )
            if thread is not None:
                self.threads.remember(anchor.chat_id, msg.message_id, thread)
            sent.append(msg)
        return sent

    async def send_to(self, chat_id: int, text: str, markup: InlineKeyboardMarkup | None = None,
                      thread: str = "", force_reply: bool = False) -> list[Message]:
        """Send to a chat no message of which is at hand (a reviewed answer, an admin's card).

        `thread` is the conversation's thread id ("t<topic>", "r<message>", or both, see
        threads.thread_for): the answer goes into the forum topic and replies to the message
        the conversation hangs on, and is remembered so a reply continues the same thread."""
        topic = re.search(r"(?:^|:)t(\d+)", thread)
        anchor = re.search(r"(?:^|:)r(\d+)", thread)
        reply = ReplyParameters(int(anchor.group(1)), allow_sending_without_reply=True) if anchor else None
        pieces = split_for_telegram(text)
        sent: list[Message] = []
        for i, piece in enumerate(pieces):
            last = i == len(pieces) - 1
            msg = await self.bot.send_message(
                chat_id=chat_id, text=piece, message_thread_id=int(topic.group(1)) if topic else None,
                reply_markup=(ForceReply(selective=True) if force_reply else markup) if last else None,
                reply_parameters=reply if i == 0 else None, link_preview_options=NO_PREVIEW)
            self.threads.remember(chat_id, msg.message_id, thread)
            sent.append(msg)
        return sent

    @contextlib.asynccontextmanager
    async def typing(self, anchor: Message, lang: str = "en") -> AsyncIterator[None]:
        """Show progress while the pipeline works: in a private chat, a draft of the reply naming
        the step (Telegram's sendMessageDraft: searching, reading, checking each claim), nothing of
        the answer before it is checked; elsewhere, or where drafts are refused, "typing…". It is
        cosmetic, so failures are only logged (a refused draft once, then typing from then on)."""
        steps = say_each("working_steps", lang)
        drafting = self.drafts and anchor.chat.type == ChatType.PRIVATE

        async def show(n: int) -> None:
            nonlocal drafting
            if drafting:
                try:
                    await self.bot.send_message_draft(anchor.chat_id, draft_id=anchor.message_id,
                                                      text=steps[min(n, len(steps) - 1)])
                    return
                except TelegramError as exc:
                    drafting = self.drafts = False
                    log.warning("Telegram refused a message draft (%s): showing typing instead", exc)
            try:
                await self.bot.send_chat_action(anchor.chat_id, ChatAction.TYPING, message_thread_id=topic_id(anchor))
            except TelegramError as exc:
                log.debug("typing action failed: %s", exc)

        async def repeat() -> None:
            n = 0
            while True:
                await asyncio.sleep(TYPING_EVERY_S)
                n += 1
                await show(n)

        await show(0)
        task = asyncio.create_task(repeat())
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


class StatusMessage:
    """One message edited in place (re-ingest progress); edits are serialised, the last wins."""

    def __init__(self, message: Message) -> None:
        self.message = message
        self._lock = asyncio.Lock()
        self._closed = False
        self._text = message.text or ""

    async def update(self, text: str) -> None:
        async with self._lock:
            if not self._closed:
                await self._edit(text)

    async def finish(self, text: str) -> None:
        self._closed = True  # progress edits still queued behind the lock are dropped
        async with self._lock:
            await self._edit(text)

    async def _edit(self, text: str) -> None:
        if text == self._text:  # Telegram rejects an edit that changes nothing
            return
        try:
            await self.message.edit_text(split_for_telegram(text)[0])
            self._text = text
        except TelegramError as exc:
            log.warning("could not edit status message: %s", exc)
