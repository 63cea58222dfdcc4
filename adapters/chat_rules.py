"""The rules Slack and Telegram share in a group chat (a Slack channel, a Telegram group), written
once: which messages nobody addressed to groundbot it answers all the same, how many a minute, what
stays unsaid there, and where "Ask a person" is offered.

A help channel answered without a mention can be flooded (a paste of 200 lines, a bot gone wrong):
past the chat's rate its messages are left alone, as if groundbot answered mentions only, so a burst
costs neither a pipeline run each nor a thread full of replies. One process counts in memory (the
`limits` library's moving window); `groundbot serve` counts in rows every worker shares
(bot/server/shared.py). Where nobody asked, a refusal, and an answer below the unprompted bar,
stay unsaid: the turn is recorded, the chat is not filled with them. Each chat's policy
(core.messages.ChatPolicy) comes from the backend: its knowledge scope's, else the platform's.
"""

from __future__ import annotations

import logging
from typing import Protocol

from limits import RateLimitItemPerMinute
from limits.storage import MemoryStorage
from limits.strategies import MovingWindowRateLimiter

from core.messages import ChatPolicy, Decision, Platform
from core.ports import Backend

log = logging.getLogger("groundbot.chats")


class ChatRate(Protocol):
    """Whether one more message of a chat may be answered without a mention now (and counts it)."""

    def allow(self, chat: str, per_minute: int) -> bool: ...


class MemoryChatRate:
    """A moving one-minute window per chat, in this process's memory."""

    def __init__(self) -> None:
        self.limiter = MovingWindowRateLimiter(MemoryStorage())

    def allow(self, chat: str, per_minute: int) -> bool:
        return per_minute <= 0 or self.limiter.hit(RateLimitItemPerMinute(per_minute), "auto-answer", chat)


class ChatRules:
    """The shared rules as one platform's adapter applies them to its chats (ids as the platform
    names them); `rate` counts each chat's messages answered without a mention."""

    def __init__(self, backend: Backend, platform: Platform, rate: ChatRate | None = None) -> None:
        self.backend = backend
        self.platform = platform
        self.rate: ChatRate = rate or MemoryChatRate()

    def policy(self, chat: str) -> ChatPolicy:
        """The chat's policy: its knowledge scope's, else the platform's settings."""
        return self.backend.chat_policy(self.platform, chat)

    def answers_unprompted(self, chat: str, text: str) -> bool:
        """Whether the chat answers this top-level message nobody addressed to groundbot (a
        question mark, or every message, as its policy says); the rate is not counted here."""
        return self.policy(chat).answers(text)

    def unprompted(self, chat: str, text: str, message: object) -> ChatPolicy | None:
        """The chat's policy when this message (`message`: its id, for the log) is answered
        though nobody addressed groundbot, and the chat is within its rate (counted); None: left alone."""
        policy = self.policy(chat)
        if not policy.answers(text):
            return None
        if not self.rate.allow(f"{self.platform}:{chat}", policy.per_minute):
            log.warning("%s chat %s is past %d messages answered without a mention this minute; %s left alone",
                        self.platform, chat, policy.per_minute, message)
            return None
        return policy

    def unsaid(self, decision: Decision | None, chat: str, message: object) -> bool:
        """Whether the reply to a message nobody addressed to groundbot stays unsaid (logged):
        a refusal (None: answering failed) or an answer below the unprompted bar."""
        if decision is not None and not decision.refused and decision.unprompted:
            return False
        why = "refused" if decision is None or decision.refused else "answered below the unprompted bar"
        log.info("%s message %s of %s asked without a mention was %s; nothing sent", self.platform, message, chat, why)
        return True

    def offers_person(self, decision: Decision, chat: str, direct: bool) -> bool:
        """Whether a reply offers "Ask a person": a refusal in a group chat whose policy names
        experts (a direct chat has no experts in it)."""
        return decision.refused and not direct and bool(self.policy(chat).experts)

    def experts(self, chat: str) -> tuple[str, ...]:
        """Who the chat's policy names as its experts (user or group ids); () = none."""
        return self.policy(chat).experts
