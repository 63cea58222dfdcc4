"""The review loop on Telegram: buttons under admins' queue cards (approve, edit, reject, save
as FAQ), the admin's reply that carries an edited answer, the reason a thumbs-down asks for,
and the Delivery port that sends reviewed answers back to the original chat or topic.

The decisions themselves are made once, in the backend's command layer; this only renders."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Coroutine, Sequence
from typing import Any

from telegram import Bot, Message, Update
from telegram.ext import CallbackQueryHandler, ContextTypes, MessageHandler, filters

from adapters.telegram.callbacks import Kind, Reason, Review, of_kind
from adapters.telegram.handlers import ONLY_NEW, PLATFORM, Handlers, Wiring, pressed
from adapters.telegram.rendering import decision_reply, reply_messages
from adapters.telegram.sending import Replies
from core.admin_replies import Action, Reply
from core.catalogue import say
from core.messages import ConversationKey, Decision

SEND_TIMEOUT_S = 30.0
_EDIT_PROMPT = re.compile(re.escape(say("edit_prompt", id="__ID__")).replace("__ID__", r"(\d+)"))


def edit_target(message: Message, bot_id: int) -> int | None:
    """The review item an admin's reply edits: they replied to the bot's edit prompt."""
    reply = message.reply_to_message
    if reply is None or reply.from_user is None or reply.from_user.id != bot_id:
        return None
    found = _EDIT_PROMPT.search(reply.text or "")
    return int(found.group(1)) if found else None


class _EditReply(filters.MessageFilter):
    """Text replies to the bot's "reply with the corrected answer" prompt."""

    def __init__(self) -> None:
        super().__init__(name="edit_reply")
        self.bot_id = 0

    def filter(self, message: Message) -> bool:
        return bool(message.text) and edit_target(message, self.bot_id or message.get_bot().id) is not None


class ReviewButtons:
    """Admins' review buttons and edit replies; users' feedback reasons."""

    def __init__(self, wiring: Wiring) -> None:
        self.w = wiring

    def handlers(self) -> Handlers:
        return [
            CallbackQueryHandler(self.on_review, pattern=of_kind(Kind.REVIEW)),
            CallbackQueryHandler(self.on_reason, pattern=of_kind(Kind.REASON)),
            MessageHandler(ONLY_NEW & filters.REPLY & filters.TEXT & ~filters.COMMAND & _EditReply(), self.on_edit),
        ]

    async def show(self, message: Message, reply: Reply, force_reply: bool = False) -> None:
        """A command-layer reply as messages in the chat of `message`, buttons under each item."""
        for text, markup in reply_messages(reply):
            await self.w.replies.send_to(message.chat_id, text, markup, force_reply=force_reply)

    async def on_review(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        press = await pressed(update, Review)
        if press is None:
            return
        query, review = press
        reply = await asyncio.to_thread(self.w.backend.review, PLATFORM, str(query.from_user.id), review.action,
                                        review.item)
        prompt = review.action == Action.EDIT and bool(_EDIT_PROMPT.search(reply.text))  # the admin's reply carries the text
        await query.answer(reply.text[:190] if not (reply.ok or prompt) else None)
        if isinstance(query.message, Message) and (reply.ok or prompt):
            await self.show(query.message, reply, force_reply=prompt)

    async def on_edit(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        message, user = update.effective_message, update.effective_user
        if message is None or user is None:
            return
        item = edit_target(message, context.bot.id)
        if item is None:
            return
        reply = await asyncio.to_thread(self.w.backend.review, PLATFORM, str(user.id), Action.EDIT, item,
                                        message.text or "")
        await self.show(message, reply)

    async def on_reason(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        """A feedback reason (after a thumbs-down) or "this should be answerable" (under a refusal)."""
        press = await pressed(update, Reason)
        if press is None:
            return
        query, given = press
        reply = await asyncio.to_thread(self.w.backend.feedback, str(query.from_user.id), given.turn, -1,
                                        given.reason)
        await query.answer(reply.text[:190])


class TelegramDelivery:
    """Delivery port: reviewed answers to their chat (and topic or reply chain), queue cards to
    each admin's private chat. Called from worker threads; sends on the bot's event loop."""

    def __init__(self, bot: Bot, replies: Replies, admin_ids: tuple[int, ...]) -> None:
        self.bot = bot
        self.replies = replies
        self.admin_ids = admin_ids
        self.loop: asyncio.AbstractEventLoop | None = None

    async def bind(self, *_: Any) -> None:
        """Remember the event loop the bot runs on (called on start and with every update)."""
        self.loop = asyncio.get_running_loop()

    def _run(self, coro: Coroutine[Any, Any, Any]) -> None:
        if self.loop is None or not self.loop.is_running():  # stopped, or closed: nothing would run it
            coro.close()
            raise RuntimeError("the Telegram bot is not running in this process")
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        future.result(timeout=SEND_TIMEOUT_S)

    def deliver(self, key: ConversationKey, decision: Decision) -> None:
        text, markup = decision_reply(decision, picked=False)
        self._run(self.replies.send_to(int(key.chat_id), text, markup, key.thread_id))

    def notify(self, reply: Reply, users: Sequence[str] = ()) -> None:
        """To the global admins' private chats and the scope admins' (`users`), each once."""
        chats = list(dict.fromkeys([*self.admin_ids, *(int(u) for u in users)]))

        async def post() -> None:
            for admin in chats:  # an admin's private chat id is their user id
                for text, markup in reply_messages(reply):
                    await self.replies.send_to(admin, text, markup)

        if chats:
            self._run(post())
