"""Admin commands: /reingest (with live progress), /stats, /review. The backend's command
layer checks the admin list and answers everyone else with a polite refusal."""

from __future__ import annotations

import asyncio
import time

from telegram import Update
from telegram.ext import CommandHandler, ContextTypes

from adapters.telegram.handlers import ONLY_NEW, PLATFORM, Handlers, Wiring
from adapters.telegram.review import ReviewButtons
from adapters.telegram.sending import StatusMessage
from core.catalogue import say

PROGRESS_EVERY_S = 1.0  # edit the re-ingest status message at most this often


class AdminCommands:
    """/reingest, /stats and /review: the backend's command layer decides (and refuses
    non-admins); this shows its replies, with live progress for a re-ingest."""

    def __init__(self, wiring: Wiring, review: ReviewButtons) -> None:
        self.w = wiring
        self.review = review

    def handlers(self) -> Handlers:
        return [
            CommandHandler("reingest", self.on_reingest, filters=ONLY_NEW),
            CommandHandler(["stats", "review"], self.on_command, filters=ONLY_NEW),
        ]

    async def on_command(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        message, user = update.effective_message, update.effective_user
        if message is None or user is None:
            return
        name, _, args = (message.text or "").partition(" ")
        reply = await asyncio.to_thread(self.w.backend.command, PLATFORM, str(user.id), name.split("@")[0], args,
                                        None, str(message.chat_id))
        await self.review.show(message, reply)

    async def on_reingest(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        message, user = update.effective_message, update.effective_user
        if message is None or user is None:
            return
        uid, args, chat = str(user.id), " ".join(context.args or []), str(message.chat_id)
        if not self.w.backend.is_admin(PLATFORM, uid, chat):  # no progress message for a refusal
            reply = await asyncio.to_thread(self.w.backend.command, PLATFORM, uid, "reingest", args, None, chat)
            await self.w.replies.send(message, reply.text)
            return
        status = StatusMessage((await self.w.replies.send(message, say("reingest_started")))[-1])
        loop = asyncio.get_running_loop()
        last = [0.0]

        def progress(phase: str, done: int, total: int) -> None:  # runs in the ingest thread
            now = time.monotonic()
            if now - last[0] >= PROGRESS_EVERY_S:
                last[0] = now
                text = say("reingest_progress", phase=phase, done=done, total=total)
                asyncio.run_coroutine_threadsafe(status.update(text), loop)

        reply = await asyncio.to_thread(self.w.backend.command, PLATFORM, uid, "reingest", args, progress, chat)
        await status.finish(reply.text)
