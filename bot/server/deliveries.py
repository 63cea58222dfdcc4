"""Platform deliveries `groundbot serve` has acknowledged but not yet answered, kept answerable
when the worker holding them dies.

Telegram re-sends a webhook update only while it gets no 2xx, Slack retries an event only when
it gets no 2xx within 3 s: once a worker has said 200, the platform forgets the message. So a
worker acknowledges a delivery only after claiming it in the database *with its payload*
(storage/records/deliveries.py), answers it, and marks it done. Its heartbeat renews its claims; a
worker killed in between stops renewing, and every worker's sweeper looks for such claims and
answers them from the stored payload, as if the platform had delivered them again (Telegram
updates through python-telegram-bot, Slack events through bolt, signed afresh with the signing
secret). The turn's uid is fixed by the message (core.messages.message_uid), so a turn the dead
worker had already recorded is not recorded twice.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from starlette.concurrency import run_in_threadpool

from bot.server.metrics import Metrics
from core.messages import Platform, message_uid
from storage.records.deliveries import Claim
from storage.records.shared_state import SharedState

log = logging.getLogger("groundbot.serve")
T = TypeVar("T")


class Inbox:
    """Claims, answers and marks done the deliveries of one worker; takes over a dead one's."""

    def __init__(self, state: SharedState, metrics: Metrics, *, telegram: Any = None, slack: Any = None,
                 slack_secret: str = "", sweep_s: float = 2.0) -> None:
        self.state = state
        self.metrics = metrics
        self.telegram = telegram  # adapters.telegram.TelegramBot, when the webhook is configured
        self.slack = slack  # adapters.slack.SlackAdapter, when Slack is configured
        self.slack_secret = slack_secret
        self.sweep_s = sweep_s
        self._tasks: set[asyncio.Task[None]] = set()
        self._sweeper: asyncio.Task[None] | None = None
        # claims and their marks off the event loop, but never queued behind the turns that
        # python-telegram-bot runs in asyncio's default pool: a done mark waiting there for
        # seconds is a window in which a killed worker's answered update gets answered again
        self._pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="groundbot-deliveries")

    async def _db(self, fn: Callable[..., T], *args: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._pool, fn, *args)

    # -- Telegram ------------------------------------------------------------------------
    def telegram_key(self, update_id: int) -> str:
        return f"telegram:{self.telegram.options.bot_id}:update:{update_id}"

    async def telegram_update(self, data: dict[str, Any]) -> bool:
        """Claim the update with its body, then answer it in the background; False if it was
        a re-delivery someone has answered or is answering (acknowledge it and do nothing)."""
        from telegram import Update

        update = Update.de_json(data, self.telegram.bot)
        key = self.telegram_key(update.update_id)
        claim = await self._db(self.state.deliveries.claim, key, data)
        if claim in (Claim.BUSY, Claim.DONE):
            self.metrics.deliveries_skipped.labels(Platform.TELEGRAM).inc()
            return False
        if claim is Claim.TAKEN:
            self.metrics.deliveries_taken_over.labels(Platform.TELEGRAM).inc()
            if await self._db(self._replied, update):
                log.warning("delivery %s was answered before its worker died; not answering it again", key)
                await self._done(key)
                return True
        task = asyncio.create_task(self._answer_telegram(update, key))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return True

    def _replied(self, update: Any) -> bool:
        """A question whose turn the dead worker recorded and whose reply it sent (the reply-thread
        row the adapter writes after the send): answering it again would be a duplicate reply."""
        message = update.message
        if message is None:
            return False
        uid = message_uid(Platform.TELEGRAM, self.telegram.options.bot_id, message.chat_id, message.message_id)
        return self.state.threads.replied_after_turn(uid, f"{Platform.TELEGRAM}:{message.chat_id}:")

    async def _answer_telegram(self, update: Any, key: str) -> None:
        """python-telegram-bot's own processing (its per-chat order, its handlers), then done."""
        application = self.telegram.application
        try:
            await application.update_processor.process_update(update, application.process_update(update))
        finally:
            await self._done(key)

    # -- Slack -------------------------------------------------------------------------------
    def replay_slack(self, body: dict[str, Any]) -> None:
        """Dispatch a stored Events API callback through bolt again (on a worker thread); it is
        signed now, with the signing secret, since Slack's signature was checked on arrival."""
        from slack_bolt.request import BoltRequest
        from slack_sdk.signature import SignatureVerifier

        raw = json.dumps(body)
        stamp = str(int(time.time()))
        signature = SignatureVerifier(self.slack_secret).generate_signature(timestamp=stamp, body=raw) or ""
        self.slack.app.dispatch(BoltRequest(body=raw, headers={
            "content-type": "application/json", "x-slack-request-timestamp": stamp, "x-slack-signature": signature}))

    # -- the sweeper -------------------------------------------------------------------------
    async def sweep(self) -> int:
        """Answer the claims of workers that stopped renewing them; returns how many were offered."""
        offered = 0
        for key, payload in await self._db(self.state.deliveries.abandoned):
            if self.telegram is not None and key.startswith(self.telegram_key(0).rsplit(":", 1)[0] + ":"):
                offered += await self.telegram_update(payload)
            elif self.slack is not None and key.startswith("slack:event:"):  # its middleware claims it
                await run_in_threadpool(self.replay_slack, payload)
                offered += 1
        return offered

    async def _sweep_forever(self) -> None:
        while True:
            await asyncio.sleep(self.sweep_s)
            try:
                await self.sweep()
            except Exception as exc:  # the database is away for now; the next round tries again
                log.warning("delivery sweep failed: %s", str(exc).splitlines()[0][:200])

    def start(self) -> None:
        """Heartbeat (renews this worker's claims) and the sweeper (takes over dead workers')."""
        self.state.start_heartbeat()
        self._sweeper = asyncio.create_task(self._sweep_forever())

    async def stop(self) -> None:
        """Stop sweeping, finish the Telegram updates in hand (they were acknowledged)."""
        if self._sweeper is not None:
            self._sweeper.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        self._pool.shutdown(wait=True)

    async def _done(self, key: str) -> None:
        try:
            await self._db(self.state.deliveries.done, key)
        except Exception as exc:  # the claim stays; a sweeper answers again, recorded once by uid
            log.error("could not mark delivery %s done: %s", key, str(exc).splitlines()[0][:200])
