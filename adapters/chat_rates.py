"""How many messages of one group chat groundbot answers without a mention per minute.

A help channel answered without a mention can be flooded (a paste of 200 lines, a bot gone
wrong); past the chat's limit its messages are left alone, as if groundbot answered mentions
only, so a burst costs neither a pipeline run each nor a thread full of replies. One process
counts in memory (the `limits` library's moving window); `groundbot serve` counts in rows that
every worker shares (bot/server/shared.py)."""

from __future__ import annotations

from typing import Protocol

from limits import RateLimitItemPerMinute
from limits.storage import MemoryStorage
from limits.strategies import MovingWindowRateLimiter


class ChatRate(Protocol):
    """Whether one more message of a chat may be answered without a mention now (and counts it)."""

    def allow(self, chat: str, per_minute: int) -> bool: ...


class MemoryChatRate:
    """A moving one-minute window per chat, in this process's memory."""

    def __init__(self) -> None:
        self.limiter = MovingWindowRateLimiter(MemoryStorage())

    def allow(self, chat: str, per_minute: int) -> bool:
        return per_minute <= 0 or self.limiter.hit(RateLimitItemPerMinute(per_minute), "auto-answer", chat)
