"""The Telegram adapter's limits, on python-telegram-bot's own classes (no network): a 429
asking for a short wait is retried, a long one is given up at once; one chat's updates run in
arrival order while another chat's run alongside."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from telegram import Chat, Message, Update
from telegram.error import RetryAfter

from adapters.telegram.limits import ChatOrder, FloodControl

pytestmark = pytest.mark.filterwarnings("ignore:.*retry_after.*:telegram.warnings.PTBDeprecationWarning")


def flaky(*waits: int) -> tuple[list[float], Any]:
    """A Bot API call that answers 429 with each of `waits` in turn, then succeeds."""
    calls: list[float] = []

    async def call() -> dict[str, Any]:
        calls.append(time.monotonic())
        if len(calls) <= len(waits):
            raise RetryAfter(waits[len(calls) - 1])
        return {"ok": True}

    return calls, call


async def test_a_short_flood_wait_is_waited_out_and_retried() -> None:
    calls, call = flaky(1)
    result = await FloodControl(max_retries=3, max_wait_s=30).process_request(call, (), {}, "sendMessage",
                                                                                {"chat_id": 5}, None)
    assert result == {"ok": True} and len(calls) == 2 and calls[1] - calls[0] >= 1.0


async def test_a_long_flood_wait_is_given_up_at_once() -> None:
    calls, call = flaky(60)
    started = time.monotonic()
    with pytest.raises(RetryAfter):
        await FloodControl(max_retries=3, max_wait_s=30).process_request(call, (), {}, "sendMessage",
                                                                         {"chat_id": 5}, None)
    assert len(calls) == 1 and time.monotonic() - started < 1.0


def update(update_id: int, chat_id: int) -> Update:
    chat = Chat(chat_id, "private")
    return Update(update_id, message=Message(update_id, None, chat, text="q"))  # type: ignore[arg-type]


async def test_one_chat_in_order_other_chats_alongside() -> None:
    order = ChatOrder(4)
    events: list[str] = []

    async def work(name: str, delay: float) -> None:
        events.append(f"{name} start")
        await asyncio.sleep(delay)
        events.append(f"{name} end")

    async with order:
        await asyncio.gather(order.process_update(update(1, 10), work("a1", 0.2)),
                             order.process_update(update(2, 10), work("a2", 0.0)),
                             order.process_update(update(3, 11), work("b1", 0.0)))
    assert events.index("a1 end") < events.index("a2 start")  # chat 10 in arrival order
    assert events.index("b1 end") < events.index("a1 end")  # chat 11 did not wait for chat 10
