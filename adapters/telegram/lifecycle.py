"""The one python-telegram-bot Application: built here with the adapter's limits and
handlers, started and stopped by its own lifecycle (polling, a webhook, or a host that feeds
it updates, as `groundbot serve` does)."""

from __future__ import annotations

import asyncio
import datetime as dtm
from collections.abc import Callable
from typing import Any

from telegram import Bot, Update
from telegram.ext import Application, ApplicationBuilder, CallbackQueryHandler, TypeHandler

from adapters.chat_rules import ChatRate, ChatRules
from adapters.telegram.admin import AdminCommands
from adapters.telegram.handlers import PLATFORM, Questions, Wiring, on_error, on_other_button
from adapters.telegram.limits import ChatOrder, FloodControl, RateLimit, UserRateLimit
from adapters.telegram.options import TelegramOptions, WebhookOptions
from adapters.telegram.review import ReviewButtons, TelegramDelivery
from adapters.telegram.sending import Replies
from adapters.telegram.threads import ThreadLookup, ThreadMap
from core.ports import Backend

ALLOWED_UPDATES = ["message", "callback_query"]
AnyApplication = Application[Any, Any, Any, Any, Any, Any]


class TelegramBot:
    """Routes Telegram updates to the backend; owns the one python-telegram-bot Application.
    Everything is given here (`groundbot serve` passes rows every worker shares for the limits and
    the threads); `ready(username)` is called once `run` has connected."""

    def __init__(self, backend: Backend, options: TelegramOptions, *,
                 rate_limit: RateLimit | None = None, threads: ThreadLookup | None = None,
                 chat_rate: ChatRate | None = None, ready: Callable[[str], None] | None = None) -> None:
        self.backend = backend
        self.options = options
        self.ready = ready
        # in memory by default; `groundbot serve` passes database rows every worker shares
        self.rate_limit: RateLimit = rate_limit or UserRateLimit(options.rate_limit_per_minute)
        self.threads: ThreadLookup = threads or ThreadMap()
        self.application = self._build_application()
        self.wiring = Wiring(backend, options, self.rate_limit, self.threads, Replies(self.bot, self.threads),
                             ChatRules(backend, PLATFORM, chat_rate))
        self.questions = Questions(self.wiring)
        self.review = ReviewButtons(self.wiring)
        self.admin = AdminCommands(self.wiring, self.review)
        for part in (self.review, self.questions, self.admin):  # an edit reply is taken before it is a question
            self.application.add_handlers(part.handlers())
        # reviewed answers and queue cards leave through here, from whichever thread decides them
        self.delivery = TelegramDelivery(self.bot, self.wiring.replies, options.admin_ids)
        self.application.add_handler(TypeHandler(Update, self.delivery.bind), group=-1)
        backend.register_delivery(PLATFORM, self.delivery)
        self.application.add_handler(CallbackQueryHandler(on_other_button))  # last: only what nothing else took
        self.application.add_error_handler(on_error)

    def _build_application(self) -> AnyApplication:
        """The single place python-telegram-bot is wired up."""
        o = self.options
        builder = (
            ApplicationBuilder()
            .token(o.token)
            .rate_limiter(FloodControl(o.retry_attempts, o.max_retry_wait_s))
            .concurrent_updates(ChatOrder(max(1, o.concurrency)))
            .post_init(self._announce)  # by run_polling and run_webhook; `start` binds the delivery itself
        )
        if o.base_url:
            builder = builder.base_url(o.base_url)
        app: AnyApplication = builder.build()
        return app

    @property
    def bot(self) -> Bot:
        return self.application.bot

    async def _announce(self, application: AnyApplication) -> None:
        """Once `run` has connected: the delivery bound to the bot's loop, then `ready` told."""
        await self.delivery.bind()
        if self.ready is not None:
            self.ready(application.bot.username)

    async def start(self, webhook: WebhookOptions | None = None) -> None:
        """Connect (getMe) and start receiving updates by long polling or on a webhook."""
        app = self.application
        updater = app.updater
        if updater is None:  # build_application always gives it one
            raise RuntimeError("the Telegram application was built without an updater")
        await app.initialize()
        await self.delivery.bind()
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

    def run(self, webhook: WebhookOptions | None = None) -> None:
        """Serve until SIGINT or SIGTERM (the `groundbot telegram` main loop): the Application's
        own run_polling/run_webhook, on a fresh event loop of its own."""
        app = self.application
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        try:
            if webhook is None:
                app.run_polling(timeout=dtm.timedelta(seconds=self.options.poll_timeout_s),
                                allowed_updates=ALLOWED_UPDATES, close_loop=False)
            else:
                app.run_webhook(listen=webhook.listen, port=webhook.port, url_path=webhook.url_path,
                                webhook_url=webhook.url, secret_token=webhook.secret_token,
                                allowed_updates=ALLOWED_UPDATES, close_loop=False)
        finally:
            asyncio.set_event_loop(None)
            loop.close()
