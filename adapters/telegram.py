"""Telegram adapter: python-telegram-bot updates in, core `Incoming` messages to the backend,
decisions back out as Telegram replies with buttons.

It knows nothing about config files or storage: bot/run_telegram.py hands it a `Backend`
and plain settings values. The pipeline is synchronous, so every backend call runs in a
worker thread and the event loop stays free for other chats.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dtm
import logging
import math
import re
import signal
import time
import warnings
from collections import OrderedDict, deque
from collections.abc import AsyncIterator, Callable, Coroutine, Sequence
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import urlsplit

from telegram import (
    Bot,
    InlineKeyboardButton,
    InlineKeyboardMarkup,
    LinkPreviewOptions,
    Message,
    MessageEntity,
    ReplyParameters,
    Update,
)
from telegram.constants import ChatAction, ChatType, InlineKeyboardButtonLimit, MessageLimit
from telegram.error import RetryAfter, TelegramError
from telegram.ext import (
    Application,
    ApplicationBuilder,
    BaseRateLimiter,
    CallbackQueryHandler,
    CommandHandler,
    ContextTypes,
    MessageHandler,
    filters,
)
from telegram.warnings import PTBDeprecationWarning

from core import reasons
from core.messages import ConversationKey, Decision, Incoming
from core.ports import Backend, PathNotAllowed
from core.render import render_text, split_message

log = logging.getLogger(__name__)

PLATFORM = "telegram"
TEXT_LIMIT = int(MessageLimit.MAX_TEXT_LENGTH)  # 4096, counted by Telegram in UTF-16 code units
CALLBACK_LIMIT = int(InlineKeyboardButtonLimit.MAX_CALLBACK_DATA)  # 64 bytes
TYPING_EVERY_S = 4.0  # a chat action shows for about 5 s; repeat it while the pipeline works
PROGRESS_EVERY_S = 1.0  # edit the re-ingest status message at most this often
ALLOWED_UPDATES = ["message", "callback_query"]
NO_PREVIEW = LinkPreviewOptions(is_disabled=True)  # source links would otherwise unfurl under every answer

HELP = (
    "I answer questions from my knowledge base, and I cite where each answer comes from. "
    "When the sources do not answer a question, I say so and suggest questions I can answer.\n\n"
    "In a private chat, just send your question. In a group, mention me, reply to one of my "
    "messages, or use /ask followed by your question.\n\n"
    "/whoami shows your Telegram user id. Admins: /reingest [path] re-ingests the knowledge base, "
    "/stats shows usage, /review lists answers waiting for review."
)

AnyApplication = Application[Any, Any, Any, Any, Any, Any]


@dataclass(frozen=True)
class TelegramOptions:
    """Settings values the adapter needs; bot/run_telegram.py maps config.toml onto these."""

    token: str
    base_url: str = ""  # a self-hosted Bot API server, e.g. http://127.0.0.1:8081/bot; empty = api.telegram.org
    max_message_chars: int = 2000
    rate_limit_per_minute: int = 20
    refusal_message: str = "I can't answer that from the knowledge base I have."
    concurrency: int = 4  # updates handled at once; each may hold one worker thread in the pipeline
    poll_timeout_s: int = 10  # long-polling timeout of getUpdates
    retry_attempts: int = 3  # retries of one Bot API call after a 429
    max_retry_wait_s: float = 30.0  # a 429 asking for a longer wait is not retried


@dataclass(frozen=True)
class WebhookOptions:
    """Where Telegram posts updates and the secret it must send with each one."""

    url: str  # the public https URL registered with setWebhook
    secret_token: str
    listen: str = "0.0.0.0"
    port: int = 8443

    @property
    def url_path(self) -> str:
        """The local path to serve: the path of the public URL (a reverse proxy keeps it)."""
        return urlsplit(self.url).path.strip("/")


# -- rendering ------------------------------------------------------------------------
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
    """Plain text (no parse mode, so nothing needs escaping) with numbered sources."""
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


# -- small pieces of adapter state ---------------------------------------------------
class RetryAfterLimiter(BaseRateLimiter[int]):
    """Retries a Bot API call that got 429 Too Many Requests, waiting as Telegram asks.

    The wait grows with each attempt (never shorter than `retry_after`); a wait longer
    than `max_wait_s` is not worth holding a reply for, so the error goes up instead.
    """

    def __init__(self, attempts: int = 3, max_wait_s: float = 30.0, base_delay_s: float = 0.5) -> None:
        self.attempts = attempts
        self.max_wait_s = max_wait_s
        self.base_delay_s = base_delay_s

    async def initialize(self) -> None:
        return None

    async def shutdown(self) -> None:
        return None

    async def process_request(
        self,
        callback: Callable[..., Coroutine[Any, Any, bool | dict[str, Any] | list[dict[str, Any]]]],
        args: Any,
        kwargs: dict[str, Any],
        endpoint: str,
        data: dict[str, Any],
        rate_limit_args: int | None,
    ) -> bool | dict[str, Any] | list[dict[str, Any]]:
        attempt = 0
        while True:
            try:
                return await callback(*args, **kwargs)
            except RetryAfter as exc:
                delay = max(_retry_after_s(exc), self.base_delay_s * 2**attempt)
                if attempt >= self.attempts or delay > self.max_wait_s:
                    raise
                attempt += 1
                log.warning("telegram %s: flood control, retry %d in %.1f s", endpoint, attempt, delay)
                await asyncio.sleep(delay)


def _retry_after_s(exc: RetryAfter) -> float:
    with warnings.catch_warnings():  # the int/timedelta migration warning is not ours to fix
        warnings.simplefilter("ignore", PTBDeprecationWarning)
        value = exc.retry_after
    return value.total_seconds() if isinstance(value, dtm.timedelta) else float(value)


class RateLimit(Protocol):
    """Per-user question limit: 0 when the user may ask now (counted), else seconds to wait."""

    def wait_s(self, user_id: str) -> float: ...


class ThreadLookup(Protocol):
    """Which conversation thread a bot message belongs to."""

    def remember(self, chat_id: int, message_id: int, thread: str) -> None: ...

    def get(self, chat_id: int, message_id: int) -> str | None: ...


class UserRateLimit:
    """A sliding one-minute window per user, so one user cannot flood the pipeline."""

    def __init__(self, per_minute: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.per_minute = per_minute
        self.clock = clock
        self._seen: dict[str, deque[float]] = {}

    def wait_s(self, user_id: str) -> float:
        """0 if the user may ask now (and counts it); else the seconds until they may."""
        if self.per_minute <= 0:
            return 0.0
        now = self.clock()
        if len(self._seen) > 10_000:  # forget users who have been quiet for a minute
            self._seen = {u: q for u, q in self._seen.items() if q and now - q[-1] < 60}
        recent = self._seen.setdefault(user_id, deque())
        while recent and now - recent[0] >= 60:
            recent.popleft()
        if len(recent) >= self.per_minute:
            return max(0.1, 60 - (now - recent[0]))
        recent.append(now)
        return 0.0


class ThreadMap:
    """Which conversation thread each bot message belongs to, so a reply continues it.

    Bounded and in memory: after a restart, a reply to an old message starts a new thread
    (the conversation state itself is in the transcript store).
    """

    def __init__(self, size: int = 20_000) -> None:
        self.size = size
        self._map: OrderedDict[tuple[int, int], str] = OrderedDict()

    def remember(self, chat_id: int, message_id: int, thread: str) -> None:
        self._map[(chat_id, message_id)] = thread
        self._map.move_to_end((chat_id, message_id))
        while len(self._map) > self.size:
            self._map.popitem(last=False)

    def get(self, chat_id: int, message_id: int) -> str | None:
        return self._map.get((chat_id, message_id))


class ChatLocks:
    """One lock per chat: different chats are answered in parallel, one chat in order.

    Without it, concurrent updates of one chat could reply out of order and race on the
    conversation's state and history.
    """

    def __init__(self) -> None:
        self._locks: dict[int, tuple[asyncio.Lock, int]] = {}

    @contextlib.asynccontextmanager
    async def hold(self, chat_id: int) -> AsyncIterator[None]:
        lock, users = self._locks.get(chat_id, (asyncio.Lock(), 0))
        self._locks[chat_id] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self._locks[chat_id]
            if users <= 1:
                del self._locks[chat_id]
            else:
                self._locks[chat_id] = (lock, users - 1)


class _StatusMessage:
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


def _topic_id(message: Message) -> int | None:
    return message.message_thread_id if message.is_topic_message else None


def _reply_target(message: Message) -> Message | None:
    """The message replied to; in forum topics every message 'replies' to the topic start."""
    reply = message.reply_to_message
    if reply is None or (message.is_topic_message and reply.message_id == message.message_thread_id):
        return None
    return reply


# -- the adapter -------------------------------------------------------------------------
class TelegramBot:
    """Routes Telegram updates to the backend; owns the one python-telegram-bot Application."""

    def __init__(self, backend: Backend, options: TelegramOptions, *,
                 clock: Callable[[], float] = time.monotonic, rate_limit: RateLimit | None = None,
                 threads: ThreadLookup | None = None) -> None:
        self.backend = backend
        self.options = options
        # in memory by default; `groundbot serve` passes database rows every worker shares
        self.rate_limit: RateLimit = rate_limit or UserRateLimit(options.rate_limit_per_minute, clock)
        self.threads: ThreadLookup = threads or ThreadMap()
        self.chats = ChatLocks()
        self.application = self._build_application()

    def _build_application(self) -> AnyApplication:
        """The single place python-telegram-bot is wired up."""
        o = self.options
        builder = (
            ApplicationBuilder()
            .token(o.token)
            .rate_limiter(RetryAfterLimiter(o.retry_attempts, o.max_retry_wait_s))
            .concurrent_updates(max(1, o.concurrency))
        )
        if o.base_url:
            builder = builder.base_url(o.base_url)
        app: AnyApplication = builder.build()
        only_new = filters.UpdateType.MESSAGE  # edits of old messages are not new questions
        app.add_handler(CommandHandler(["start", "help"], self._on_help, filters=only_new))
        app.add_handler(CommandHandler("ask", self._on_ask, filters=only_new))
        app.add_handler(CommandHandler("whoami", self._on_whoami, filters=only_new))
        app.add_handler(CommandHandler("reingest", self._on_reingest, filters=only_new))
        app.add_handler(CommandHandler("stats", self._on_stats, filters=only_new))
        app.add_handler(CommandHandler("review", self._on_review, filters=only_new))
        app.add_handler(MessageHandler(only_new & filters.TEXT & ~filters.COMMAND, self._on_text))
        app.add_handler(CallbackQueryHandler(self._on_button))
        app.add_error_handler(self._on_error)
        return app

    @property
    def bot(self) -> Bot:
        return self.application.bot

    # -- lifecycle ------------------------------------------------------------------
    async def start(self, webhook: WebhookOptions | None = None) -> None:
        """Connect (getMe) and start receiving updates by long polling or on a webhook."""
        app = self.application
        updater = app.updater
        assert updater is not None
        await app.initialize()
        if webhook is None:
            await updater.start_polling(timeout=dtm.timedelta(seconds=self.options.poll_timeout_s),
                                        allowed_updates=ALLOWED_UPDATES)
        else:
            await updater.start_webhook(listen=webhook.listen, port=webhook.port, url_path=webhook.url_path,
                                        webhook_url=webhook.url, secret_token=webhook.secret_token,
                                        allowed_updates=ALLOWED_UPDATES)
        await app.start()

    async def stop(self) -> None:
        """Stop receiving, finish the updates in hand, close connections."""
        app = self.application
        if app.updater is not None and app.updater.running:
            await app.updater.stop()
        if app.running:
            await app.stop()
        await app.shutdown()

    async def run(self, webhook: WebhookOptions | None = None,
                  ready: Callable[[str], None] | None = None) -> None:
        """Serve until SIGINT or SIGTERM (the `groundbot telegram` main loop)."""
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        handled = []
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.add_signal_handler(sig, stop.set)
                handled.append(sig)
        try:
            await self.start(webhook)
            try:
                if ready is not None:
                    ready(self.bot.username)
                await stop.wait()
            finally:
                await self.stop()
        finally:
            for sig in handled:
                loop.remove_signal_handler(sig)

    # -- sending --------------------------------------------------------------------
    async def _send(self, anchor: Message, text: str, markup: InlineKeyboardMarkup | None = None,
                    thread: str | None = None) -> list[Message]:
        """Send `text` in pieces of at most 4096; buttons go under the last piece.

        In groups the first piece replies to `anchor`, so the exchange reads as a thread.
        """
        pieces = split_for_telegram(text)
        reply = None if anchor.chat.type == ChatType.PRIVATE else ReplyParameters(
            anchor.message_id, allow_sending_without_reply=True)
        sent: list[Message] = []
        for i, piece in enumerate(pieces):
            msg = await self.bot.send_message(
                chat_id=anchor.chat_id, text=piece, message_thread_id=_topic_id(anchor),
                reply_markup=markup if i == len(pieces) - 1 else None,
                reply_parameters=reply if i == 0 else None, link_preview_options=NO_PREVIEW,
            )
            if thread is not None:
                self.threads.remember(anchor.chat_id, msg.message_id, thread)
            sent.append(msg)
        return sent

    @contextlib.asynccontextmanager
    async def _typing(self, anchor: Message) -> AsyncIterator[None]:
        """Show "typing…" while the pipeline works; it is cosmetic, so failures are only logged."""

        async def action() -> None:
            try:
                await self.bot.send_chat_action(anchor.chat_id, ChatAction.TYPING,
                                                message_thread_id=_topic_id(anchor))
            except TelegramError as exc:
                log.debug("typing action failed: %s", exc)

        async def repeat() -> None:
            while True:
                await asyncio.sleep(TYPING_EVERY_S)
                await action()

        await action()
        task = asyncio.create_task(repeat())
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    # -- questions ------------------------------------------------------------------
    def _thread_for(self, message: Message) -> str:
        """Conversation thread: the chat (or forum topic), or the reply chain a message joins."""
        topic = f"t{message.message_thread_id}" if message.is_topic_message else ""
        reply = _reply_target(message)
        if reply is None:
            return topic
        known = self.threads.get(message.chat_id, reply.message_id)
        if known is not None:
            return known
        return f"{topic}:r{reply.message_id}" if topic else f"r{reply.message_id}"

    def _addressed_text(self, message: Message) -> str | None:
        """The question in `message`, or None when group chatter is not meant for the bot."""
        text = message.text or ""
        if message.chat.type == ChatType.PRIVATE:
            return text
        bot = self.bot
        mentions = [
            part for entity, part in message.parse_entities([MessageEntity.MENTION, MessageEntity.TEXT_MENTION]).items()
            if (entity.type == MessageEntity.MENTION and part.lower() == f"@{bot.username}".lower())
            or (entity.type == MessageEntity.TEXT_MENTION and entity.user is not None and entity.user.id == bot.id)
        ]
        reply = _reply_target(message)
        to_bot = reply is not None and reply.from_user is not None and reply.from_user.id == bot.id
        if not mentions and not to_bot:
            return None
        for part in mentions:
            text = text.replace(part, " ")
        return re.sub(r"[ \t]{2,}", " ", text).strip()

    async def _answer(self, anchor: Message, user_id: int, question: str, thread: str,
                      suggestion_id: int | None = None) -> None:
        """Check limits, ask the backend off the event loop, reply; never raises at the user."""
        async with self.chats.hold(anchor.chat_id):
            await self._answer_in_order(anchor, user_id, question, thread, suggestion_id)

    async def _answer_in_order(self, anchor: Message, user_id: int, question: str, thread: str,
                               suggestion_id: int | None) -> None:
        uid = str(user_id)
        wait = self.rate_limit.wait_s(uid)
        if wait:
            await self._send(anchor, f"You are sending questions faster than I can answer "
                                     f"(at most {self.options.rate_limit_per_minute} a minute). "
                                     f"Please wait {math.ceil(wait)} seconds and ask again.", thread=thread)
            return
        cap = self.options.max_message_chars
        if cap and len(question) > cap:
            await self._send(anchor, f"Your message is {len(question)} characters long; I can take questions of "
                                     f"up to {cap} characters. Please shorten it and ask again.", thread=thread)
            return
        incoming = Incoming(ConversationKey(PLATFORM, str(anchor.chat_id), thread), uid, question,
                            suggestion_id=suggestion_id)
        picked = suggestion_id is not None
        async with self._typing(anchor):
            try:
                decision = await asyncio.to_thread(self.backend.ask, incoming)
            except Exception as exc:  # answering must end in a reply, never a silent crash
                log.exception("answering failed for %s", incoming.key.as_str())
                await self._send(anchor, failure_text(self.options.refusal_message, exc), thread=thread)
                return
        if decision.refused:
            await self._send(anchor, refusal_text(decision, picked=picked), suggestion_keyboard(decision), thread)
        else:
            markup = feedback_keyboard(decision.turn_id) if decision.turn_id else None
            await self._send(anchor, answer_text(decision, picked=picked), markup, thread)

    async def _on_text(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        message, user = update.effective_message, update.effective_user
        if message is None or user is None or user.is_bot:
            return
        question = self._addressed_text(message)
        if question is None:
            return
        if not question:
            await self._send(message, "Yes? Ask me a question about the knowledge base.")
            return
        await self._answer(message, user.id, question, self._thread_for(message))

    async def _on_ask(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        message, user = update.effective_message, update.effective_user
        if message is None or user is None:
            return
        parts = (message.text or "").split(maxsplit=1)
        question = parts[1].strip() if len(parts) > 1 else ""
        reply = _reply_target(message)
        if not question and reply is not None and reply.text:  # "/ask" in reply to someone's question
            question = reply.text
        if not question:
            await self._send(message, "Ask like this: /ask How do I re-ingest documents?")
            return
        await self._answer(message, user.id, question, self._thread_for(message))

    async def _on_button(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        query = update.callback_query
        if query is None:
            return
        kind, parts = parse_callback(query.data or "")
        try:
            if kind == "f" and len(parts) == 2:
                value = 1 if int(parts[1]) > 0 else -1
                ok = await asyncio.to_thread(self.backend.record_feedback, int(parts[0]), str(query.from_user.id), value)
                await query.answer("Thanks for the feedback." if ok else "That answer is no longer available.")
            elif kind == "s" and len(parts) == 1:
                await query.answer()
                msg = query.message
                if isinstance(msg, Message):
                    thread = self.threads.get(msg.chat_id, msg.message_id)
                    if thread is None:
                        thread = f"t{msg.message_thread_id}" if msg.is_topic_message else ""
                    await self._answer(msg, query.from_user.id, "", thread, suggestion_id=int(parts[0]))
            else:
                await query.answer()
        except ValueError:  # forged or stale callback data
            await query.answer("That button no longer works.")

    # -- admin commands ---------------------------------------------------------------
    async def _admin(self, update: Update, what: str) -> tuple[Message, str] | None:
        """The message and user id if the sender is an admin; otherwise a polite refusal."""
        message, user = update.effective_message, update.effective_user
        if message is None or user is None:
            return None
        uid = str(user.id)
        if not self.backend.is_admin(PLATFORM, uid):
            await self._send(message, f"Sorry, only groundbot admins can {what}.")
            return None
        return message, uid

    async def _on_reingest(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        admin = await self._admin(update, "re-ingest the knowledge base")
        if admin is None:
            return
        message, uid = admin
        paths: Sequence[str] | None = list(context.args or []) or None
        status = _StatusMessage((await self._send(message, "Re-ingesting the knowledge base…"))[-1])
        loop = asyncio.get_running_loop()
        last = [0.0]

        def progress(phase: str, done: int, total: int) -> None:  # runs in the ingest thread
            now = time.monotonic()
            if now - last[0] >= PROGRESS_EVERY_S:
                last[0] = now
                asyncio.run_coroutine_threadsafe(status.update(f"Re-ingesting… {phase}: {done}/{total}"), loop)

        try:
            summary = await asyncio.to_thread(self.backend.admin_reingest, PLATFORM, uid, paths, progress)
        except PathNotAllowed as exc:
            await status.finish(f"Re-ingest refused: {exc}")
        except PermissionError:
            await status.finish("Sorry, only groundbot admins can re-ingest the knowledge base.")
        except Exception as exc:
            log.exception("re-ingest failed")
            await status.finish(f"Re-ingest failed: {type(exc).__name__}: {exc}")
        else:
            await status.finish("Re-ingest done: " + summary.line())

    async def _on_stats(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        admin = await self._admin(update, "see stats")
        if admin is None:
            return
        message, uid = admin
        try:
            data = await asyncio.to_thread(self.backend.admin_stats, PLATFORM, uid)
        except PermissionError:
            await self._send(message, "Sorry, only groundbot admins can see stats.")
            return
        await self._send(message, format_stats(data))

    async def _on_review(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        admin = await self._admin(update, "see the review queue")
        if admin is None:
            return
        message, uid = admin
        try:
            rows = await asyncio.to_thread(self.backend.admin_review_queue, PLATFORM, uid)
        except PermissionError:
            await self._send(message, "Sorry, only groundbot admins can see the review queue.")
            return
        lines = [f"#{r.get('turn_id')}: {r.get('question', '')}" for r in rows]
        await self._send(message, "Waiting for review:\n" + "\n".join(lines) if lines else "Nothing is waiting for review.")

    async def _on_help(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        if update.effective_message is not None:
            await self._send(update.effective_message, HELP)

    async def _on_whoami(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        """Admins are listed by numeric user id, which Telegram's apps do not show."""
        message, user = update.effective_message, update.effective_user
        if message is not None and user is not None:
            role = "an admin" if self.backend.is_admin(PLATFORM, str(user.id)) else "not an admin"
            await self._send(message, f"Your Telegram user id is {user.id} ({role} of this bot).")

    async def _on_error(self, update: object, context: ContextTypes.DEFAULT_TYPE) -> None:
        log.error("telegram update %s failed", getattr(update, "update_id", "?"), exc_info=context.error)
