"""How much and in what order: Telegram's flood control, a per-user question rate and
per-chat ordering: python-telegram-bot's own parts and the `limits` library's moving window,
configured."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dtm
import logging
import time
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from typing import Any, Protocol

from limits import RateLimitItemPerMinute
from limits.storage import MemoryStorage
from limits.strategies import MovingWindowRateLimiter
from telegram import Update
from telegram.error import RetryAfter
from telegram.ext import AIORateLimiter, BaseUpdateProcessor
from telegram.warnings import PTBDeprecationWarning

log = logging.getLogger(__name__)

Result = bool | dict[str, Any] | list[dict[str, Any]]


def retry_after_s(exc: RetryAfter) -> float:
    with warnings.catch_warnings():  # the int/timedelta migration warning is not ours to fix
        warnings.simplefilter("ignore", PTBDeprecationWarning)
        value = exc.retry_after
    return value.total_seconds() if isinstance(value, dtm.timedelta) else float(value)


class _NotWorthWaiting(Exception):
    def __init__(self, error: RetryAfter) -> None:
        super().__init__(str(error))
        self.error = error


class FloodControl(AIORateLimiter):
    """python-telegram-bot's limiter (Telegram's send rates, retries after 429 Too Many
    Requests as Telegram asks), except that a wait longer than `max_wait_s` is not worth
    holding a reply for: that 429 goes up at once instead of being retried."""

    def __init__(self, max_retries: int = 3, max_wait_s: float = 30.0) -> None:
        super().__init__(max_retries=max_retries)
        self.max_wait_s = max_wait_s

    async def process_request(
        self,
        callback: Callable[..., Coroutine[Any, Any, Result]],
        args: Any,
        kwargs: dict[str, Any],
        endpoint: str,
        data: dict[str, Any],
        rate_limit_args: int | None,
    ) -> Result:
        async def capped(*a: Any, **kw: Any) -> Result:
            try:
                return await callback(*a, **kw)
            except RetryAfter as exc:
                if retry_after_s(exc) > self.max_wait_s:
                    raise _NotWorthWaiting(exc) from exc
                log.warning("telegram %s: flood control, retrying in %.1f s", endpoint, retry_after_s(exc))
                raise

        try:
            return await super().process_request(capped, args, kwargs, endpoint, data, rate_limit_args)
        except _NotWorthWaiting as exc:
            raise exc.error from None


class ChatOrder(BaseUpdateProcessor):
    """Different chats are answered in parallel (up to `max_concurrent_updates`), one chat in
    the order its updates arrived, so replies cannot overtake each other or race on the
    conversation. (python-telegram-bot takes the concurrency slot first, so an update waiting
    for its chat holds one.)"""

    def __init__(self, max_concurrent_updates: int) -> None:
        super().__init__(max_concurrent_updates)
        self._chats: dict[int, tuple[asyncio.Lock, int]] = {}

    async def do_process_update(self, update: object, coroutine: Awaitable[Any]) -> None:
        chat = update.effective_chat if isinstance(update, Update) else None
        async with self._hold(chat.id if chat is not None else None):
            await coroutine

    async def initialize(self) -> None:
        return None

    async def shutdown(self) -> None:
        return None

    @contextlib.asynccontextmanager
    async def _hold(self, chat_id: int | None) -> AsyncIterator[None]:
        if chat_id is None:
            yield
            return
        lock, users = self._chats.get(chat_id, (asyncio.Lock(), 0))
        self._chats[chat_id] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self._chats[chat_id]
            if users <= 1:
                del self._chats[chat_id]
            else:
                self._chats[chat_id] = (lock, users - 1)


class RateLimit(Protocol):
    """Per-user question limit: 0 when the user may ask now (counted), else seconds to wait."""

    def wait_s(self, user_id: str) -> float: ...


class UserRateLimit:
    """A moving one-minute window per user (the `limits` library's, in memory), so one user
    cannot flood the pipeline; `groundbot serve` shares the window between workers instead
    (bot/server/shared.py)."""

    def __init__(self, per_minute: int) -> None:
        self.item = RateLimitItemPerMinute(per_minute) if per_minute > 0 else None
        self.limiter = MovingWindowRateLimiter(MemoryStorage())

    def wait_s(self, user_id: str) -> float:
        """0 if the user may ask now (and counts it); else the seconds until they may."""
        if self.item is None:
            return 0.0
        if self.limiter.hit(self.item, "telegram", user_id):
            return 0.0
        reset_at, _remaining = self.limiter.get_window_stats(self.item, "telegram", user_id)
        return max(0.1, reset_at - time.time())
