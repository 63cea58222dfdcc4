"""Updates in, replies out: questions (private text, group mentions and replies, /ask), the
buttons under replies, and the shared wiring admin commands build on. To add a button, give
it a press type in adapters/telegram/callbacks.py and one `CallbackQueryHandler` with its kind's
pattern in `handlers()`, whose handler reads the press with `pressed`."""

from __future__ import annotations

import asyncio
import logging
import math
from dataclasses import dataclass
from typing import TypeVar

from telegram import CallbackQuery, Message, MessageEntity, Update, User
from telegram.constants import ChatType
from telegram.ext import BaseHandler, CallbackQueryHandler, CommandHandler, ContextTypes, MessageHandler, filters

from adapters.chat_rules import ChatRules
from adapters.telegram.callbacks import Escalate, Kind, Pick, Press, Vote, decode, of_kind
from adapters.telegram.limits import RateLimit
from adapters.telegram.options import TelegramOptions
from adapters.telegram.rendering import HELP_KEY, decision_reply, failure_text, reply_messages
from adapters.telegram.sending import Replies
from adapters.telegram.threads import ThreadLookup, addressed_text, private, reply_target, thread_for, topic_thread
from core.catalogue import DEFAULT, languages, say
from core.messages import ConversationKey, ExpertReply, Incoming, Platform, message_uid
from core.ports import Backend
from core.text.language import language_of

log = logging.getLogger(__name__)

PLATFORM = Platform.TELEGRAM
ONLY_NEW = filters.UpdateType.MESSAGE  # edits of old messages are not new questions
Handlers = list[BaseHandler[Update, ContextTypes.DEFAULT_TYPE, None]]
P = TypeVar("P", bound=Press)


@dataclass(frozen=True)
class Wiring:
    """What every handler needs, given whole by the bot's constructor: the backend, the settings,
    the limits, the way to reply, and the rules Telegram shares with Slack (adapters/chat_rules.py)."""

    backend: Backend
    options: TelegramOptions
    rate_limit: RateLimit
    threads: ThreadLookup
    replies: Replies
    rules: ChatRules


async def pressed(update: Update, kind: type[P]) -> tuple[CallbackQuery, P] | None:
    """The pressed button's query and what it carries, read by the one codec
    (adapters/telegram/callbacks.py). None when there is no query, or when the data is not a
    press of this kind (forged, cut short): that button is then told it no longer works."""
    query = update.callback_query
    if query is None:
        return None
    press = decode(query.data)
    if not isinstance(press, kind):
        await stale(query)
        return None
    return query, press


async def stale(query: CallbackQuery) -> None:
    """Stop a button's spinner with "that button no longer works", in the language of the
    message the button sits under (a Persian refusal's buttons answer in Persian)."""
    msg = query.message
    await query.answer(say("button_stale", language_of((msg.text or "") if isinstance(msg, Message) else "")))


class Questions:
    """Questions and the buttons under their replies (feedback, suggestions)."""

    def __init__(self, wiring: Wiring) -> None:
        self.w = wiring

    def handlers(self) -> Handlers:
        return [
            CommandHandler(["start", "help"], self.on_help, filters=ONLY_NEW),
            CommandHandler("ask", self.on_ask, filters=ONLY_NEW),
            CommandHandler("whoami", self.on_whoami, filters=ONLY_NEW),
            MessageHandler(ONLY_NEW & filters.TEXT & ~filters.COMMAND, self.on_text),
            CallbackQueryHandler(self.on_feedback, pattern=of_kind(Kind.VOTE)),
            CallbackQueryHandler(self.on_suggestion, pattern=of_kind(Kind.SUGGESTION)),
            CallbackQueryHandler(self.on_escalate, pattern=of_kind(Kind.ESCALATE)),
        ]

    async def answer(self, anchor: Message, user_id: int, question: str, thread: str,
                     suggestion_id: int | None = None, quiet: bool = False) -> None:
        """Check limits, ask the backend off the event loop, reply; never raises at the user.
        `quiet`: a group message answered without a mention, whose refusal (or limit) is
        recorded or logged but not sent. Updates of one chat reach here one at a time (limits.ChatOrder)."""
        o, uid = self.w.options, str(user_id)
        wait = self.w.rate_limit.wait_s(uid)
        if wait and quiet:
            log.info("user %s is past the rate limit; their group message %s left alone", uid, anchor.message_id)
            return
        if wait:
            await self.w.replies.send(anchor, say("rate_limited", language_of(question), limit=o.rate_limit_per_minute,
                                                  seconds=math.ceil(wait)), thread=thread)
            return
        if o.max_message_chars and len(question) > o.max_message_chars:
            if quiet:
                return
            await self.w.replies.send(anchor, say("too_long", language_of(question), length=len(question),
                                                  limit=o.max_message_chars), thread=thread)
            return
        # a question's turn uid is its message's: answered again after a worker died, it is recorded once
        turn_uid = "" if suggestion_id is not None else message_uid(PLATFORM, o.bot_id,
                                                                     anchor.chat_id, anchor.message_id)
        incoming = Incoming(ConversationKey(PLATFORM, str(anchor.chat_id), thread), uid, question,
                            suggestion_id=suggestion_id, uid=turn_uid)
        async with self.w.replies.typing(anchor, language_of(question)):
            try:
                decision = await asyncio.to_thread(self.w.backend.ask, incoming)
            except Exception:  # answering must end in a reply, never a silent crash
                log.exception("answering failed for %s", incoming.key.as_str())
                if not quiet:
                    await self.w.replies.send(anchor, failure_text(o.refusal_messages, language_of(question)), thread=thread)
                return
        if quiet and self.w.rules.unsaid(decision, str(anchor.chat_id), anchor.message_id):
            return
        escalate = self.w.rules.offers_person(decision, str(anchor.chat_id), private(anchor))
        text, markup = decision_reply(decision, picked=suggestion_id is not None, escalate=escalate)
        await self.w.replies.send(anchor, text, markup, thread)

    async def on_text(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        message, user = update.effective_message, update.effective_user
        if message is None or user is None or user.is_bot:
            return
        if await self.expert_answered(message, user.id):
            return
        question = addressed_text(message, context.bot.bot)
        if question is None:
            if self.unmentioned(message):
                await self.answer(message, user.id, message.text or "", thread_for(message, self.w.threads), quiet=True)
            return
        question = replied_question(message, question, context.bot.id)
        if not question:
            await self.w.replies.send(message, say("addressed_empty", user_language(user)))
            return
        await self.answer(message, user.id, question, thread_for(message, self.w.threads))

    async def expert_answered(self, message: Message, user_id: int) -> bool:
        """An expert's reply in a conversation whose question was handed to people (a reply to
        the message that tagged them), taken as an FAQ draft (the expert is thanked), or left alone
        when it does not answer yet (an emoji, a question back). False: not an expert's such reply."""
        if private(message) or not message.text or reply_target(message) is None:
            return False
        if str(user_id) not in self.w.rules.experts(str(message.chat_id)):
            return False
        thread = thread_for(message, self.w.threads)
        taken = await asyncio.to_thread(self.w.backend.expert_reply, PLATFORM, str(message.chat_id), thread,
                                        str(user_id), message.text)
        if taken == ExpertReply.TAKEN:
            await self.w.replies.send(message, say("escalation_draft", language_of(message.text)))
        return taken != ExpertReply.NONE  # not an answer yet: left alone while the question waits for one

    async def on_escalate(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        """"Ask a person" under a refusal in a group: its experts are tagged in a reply to it, once
        per question (a second press is told they were asked)."""
        press = await pressed(update, Escalate)
        if press is None:
            return
        query, escalate = press
        handed = await asyncio.to_thread(self.w.backend.escalate, PLATFORM, str(query.from_user.id), escalate.turn)
        msg = query.message
        if handed is None or not isinstance(msg, Message):
            await stale(query)
            return
        lang = language_of(handed.question)
        if not handed.new:
            await query.answer(say("escalated_again", lang)[:190])
            return
        await query.answer()
        text, entities = tagged(say("escalated", lang, experts=_EXPERTS, asker=query.from_user.full_name,
                                    question=handed.question[:2000]), handed.experts)
        await self.w.replies.send(msg, text, thread=handed.thread_id, entities=entities)

    def unmentioned(self, message: Message) -> bool:
        """Whether a group message that neither mentions nor replies to the bot is answered all
        the same: a top-level message (not a reply to someone) that the group's policy answers,
        within the group's rate (counted)."""
        if message.chat.type not in (ChatType.GROUP, ChatType.SUPERGROUP) or reply_target(message) is not None:
            return False
        return self.w.rules.unprompted(str(message.chat_id), message.text or "", message.message_id) is not None

    async def on_ask(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        message, user = update.effective_message, update.effective_user
        if message is None or user is None:
            return
        parts = (message.text or "").split(maxsplit=1)
        question = parts[1].strip() if len(parts) > 1 else ""
        reply = reply_target(message)
        if not question and reply is not None and reply.text:  # "/ask" in reply to someone's question
            question = reply.text
        if not question:
            await self.w.replies.send(message, say("ask_usage", user_language(user)))
            return
        await self.answer(message, user.id, question, thread_for(message, self.w.threads))

    async def on_feedback(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        press = await pressed(update, Vote)
        if press is None:
            return
        query, vote = press
        reply = await asyncio.to_thread(self.w.backend.feedback, str(query.from_user.id), vote.turn,
                                        1 if vote.value > 0 else -1)
        await query.answer(reply.text[:190] if not reply.sections[-1].buttons else None)
        msg = query.message
        if reply.sections[-1].buttons and isinstance(msg, Message):  # a thumbs-down asks why, in the chat
            text, markup = reply_messages(reply)[0]
            await self.w.replies.send(msg, text, markup)

    async def on_suggestion(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        press = await pressed(update, Pick)
        if press is None:
            return
        query, pick = press
        await query.answer()
        msg = query.message
        if isinstance(msg, Message):
            thread = self.w.threads.get(msg.chat_id, msg.message_id)
            await self.answer(msg, query.from_user.id, "", topic_thread(msg) if thread is None else thread,
                              suggestion_id=pick.suggestion)

    async def on_help(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        if update.effective_message is not None:
            await self.w.replies.send(update.effective_message, say(HELP_KEY, user_language(update.effective_user)))

    async def on_whoami(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        """Admins are listed by numeric user id, which Telegram's apps do not show."""
        message, user = update.effective_message, update.effective_user
        if message is not None and user is not None:
            lang = user_language(user)
            role = say("role_admin" if self.w.backend.is_admin(PLATFORM, str(user.id)) else "role_not_admin", lang)
            await self.w.replies.send(message, say("whoami", lang, id=user.id, role=role))


def user_language(user: User | None) -> str:
    """The language of a reply that has no question to read it from (/help, /whoami, an empty
    mention): the one the person's Telegram app is set to, when groundbot speaks it."""
    code = ((user.language_code if user is not None else None) or "").split("-")[0].lower()
    return code if code in languages() else DEFAULT


def replied_question(message: Message, own: str, bot_id: int) -> str:
    """A mention in reply to someone else's message asks that message's question, with the
    mention's own words after it when it has some (as a mention inside a Slack thread does)."""
    reply = reply_target(message)
    if reply is None or not reply.text or reply.from_user is None or reply.from_user.id == bot_id:
        return own
    return f"{reply.text}\n{own}" if own else reply.text


_EXPERTS = "\x00experts\x00"  # where the tags of the experts go in the escalation's text


def tagged(text: str, experts: tuple[str, ...]) -> tuple[str, list[MessageEntity]]:
    """The text with a 👤 per expert where `_EXPERTS` stands, each a mention of that user by id
    (Telegram notifies them; their numbers stay hidden). Offsets count UTF-16 code units."""
    ids = [int(e) for e in experts if e.lstrip("-").isdigit()]
    head, _, tail = text.partition(_EXPERTS)
    offset = len(head.encode("utf-16-le")) // 2
    entities = [MessageEntity(MessageEntity.TEXT_MENTION, offset + 3 * i, 2, user=User(uid, "expert", is_bot=False))
                for i, uid in enumerate(ids)]
    return head + " ".join("👤" for _ in ids) + tail, entities


async def on_other_button(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
    """A button no handler knows (forged, or from an older version): stop its spinner."""
    if update.callback_query is not None:
        await update.callback_query.answer()


async def on_error(update: object, context: ContextTypes.DEFAULT_TYPE) -> None:
    log.error("telegram update %s failed", getattr(update, "update_id", "?"), exc_info=context.error)
