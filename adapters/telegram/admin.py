"""Admin commands: /reingest (with live progress), /stats, /review. Everyone else gets a
polite refusal; the backend checks the admin list again, so a forged update gains nothing."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence

from telegram import Message, Update
from telegram.ext import CommandHandler, ContextTypes

from adapters.telegram.handlers import ONLY_NEW, PLATFORM, Handlers, Wiring
from adapters.telegram.rendering import format_stats, review_text
from adapters.telegram.replies import StatusMessage
from core.ports import PathNotAllowed

log = logging.getLogger(__name__)

PROGRESS_EVERY_S = 1.0  # edit the re-ingest status message at most this often


class AdminCommands:
    """The commands only admins may run."""

    def __init__(self, wiring: Wiring) -> None:
        self.w = wiring

    def handlers(self) -> Handlers:
        return [
            CommandHandler("reingest", self.on_reingest, filters=ONLY_NEW),
            CommandHandler("stats", self.on_stats, filters=ONLY_NEW),
            CommandHandler("review", self.on_review, filters=ONLY_NEW),
        ]

    async def admin(self, update: Update, what: str) -> tuple[Message, str] | None:
        """The message and user id if the sender is an admin; otherwise a polite refusal."""
        message, user = update.effective_message, update.effective_user
        if message is None or user is None:
            return None
        uid = str(user.id)
        if not self.w.backend.is_admin(PLATFORM, uid):
            await self.w.replies.send(message, f"Sorry, only groundbot admins can {what}.")
            return None
        return message, uid

    async def on_reingest(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        admin = await self.admin(update, "re-ingest the knowledge base")
        if admin is None:
            return
        message, uid = admin
        paths: Sequence[str] | None = list(context.args or []) or None
        status = StatusMessage((await self.w.replies.send(message, "Re-ingesting the knowledge base…"))[-1])
        loop = asyncio.get_running_loop()
        last = [0.0]

        def progress(phase: str, done: int, total: int) -> None:  # runs in the ingest thread
            now = time.monotonic()
            if now - last[0] >= PROGRESS_EVERY_S:
                last[0] = now
                asyncio.run_coroutine_threadsafe(status.update(f"Re-ingesting… {phase}: {done}/{total}"), loop)

        try:
            summary = await asyncio.to_thread(self.w.backend.admin_reingest, PLATFORM, uid, paths, progress)
        except PathNotAllowed as exc:
            await status.finish(f"Re-ingest refused: {exc}")
        except PermissionError:
            await status.finish("Sorry, only groundbot admins can re-ingest the knowledge base.")
        except Exception as exc:
            log.exception("re-ingest failed")
            await status.finish(f"Re-ingest failed: {type(exc).__name__}: {exc}")
        else:
            await status.finish("Re-ingest done: " + summary.line())

    async def on_stats(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        admin = await self.admin(update, "see stats")
        if admin is None:
            return
        message, uid = admin
        try:
            data = await asyncio.to_thread(self.w.backend.admin_stats, PLATFORM, uid)
        except PermissionError:
            await self.w.replies.send(message, "Sorry, only groundbot admins can see stats.")
            return
        await self.w.replies.send(message, format_stats(data))

    async def on_review(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        admin = await self.admin(update, "see the review queue")
        if admin is None:
            return
        message, uid = admin
        try:
            rows = await asyncio.to_thread(self.w.backend.admin_review_queue, PLATFORM, uid)
        except PermissionError:
            await self.w.replies.send(message, "Sorry, only groundbot admins can see the review queue.")
            return
        await self.w.replies.send(message, review_text(rows))
