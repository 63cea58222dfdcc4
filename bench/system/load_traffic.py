"""Traffic for bench/system/load.py: conversations that talk to `groundbot serve` the way Telegram and
Slack do (signed Slack events, Telegram webhook updates with the secret token), re-delivering
what the platforms re-deliver, and a tally of the replies the local stand-ins receive.

A conversation is one user in one Telegram private chat or one Slack thread. It sends its
messages one after another; like a person it waits for the reply to the previous message
(or `reply_timeout_s`, so a lost message does not stall it). Every message carries a tag
(`#c07m03`) that the recorded turn keeps, so the transcript database tells which message each
turn answered and in which order.
"""

from __future__ import annotations

import asyncio
import json
import random
import re
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import httpx
from slack_sdk.signature import SignatureVerifier

from tests.standins.slack import BOT_USER, TEAM

QUESTIONS = [
    "How do I re-ingest documents?",
    "How do I run groundbot as a web service?",
    "How do I protect the ask API with a token?",
    "What is the capital of Mongolia?",
    "What does /metrics count?",
    "How does groundbot serve stop?",
    "Who won the football world cup in 1974?",
    "How do several workers share their work?",
]
TAG = re.compile(r"#c(\d+)m(\d+)")
TG_SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"


def tag(conv: int, seq: int) -> str:
    return f"#c{conv:02d}m{seq:02d}"


@dataclass
class Tally:
    """What the load sent and what came back, keyed by (conversation, message)."""

    sent_at: dict[tuple[int, int], float] = field(default_factory=dict)
    replied_at: dict[tuple[int, int], float] = field(default_factory=dict)
    replies: Counter[tuple[int, int]] = field(default_factory=Counter)
    posts: int = 0  # HTTP deliveries made, re-deliveries included
    redeliveries: int = 0  # deliberate duplicates (Telegram) and retries (Slack)
    failed_posts: int = 0  # deliveries the server did not take (connection refused/reset, 5xx)
    given_up: int = 0  # messages no delivery attempt got through for
    timeouts: int = 0  # messages whose reply did not come within reply_timeout_s
    waiters: dict[tuple[int, int], asyncio.Event] = field(default_factory=dict)

    def event(self, key: tuple[int, int]) -> asyncio.Event:
        return self.waiters.setdefault(key, asyncio.Event())


class Replies:
    """Reads the stand-ins' call logs (append-only) and wakes the conversation a reply belongs to."""

    def __init__(self, tally: Tally, telegram: Any, slack: Any, tg_chats: dict[int, int],
                 slack_threads: dict[str, int]) -> None:
        self.tally, self.telegram, self.slack = tally, telegram, slack
        self.tg_chats, self.slack_threads = tg_chats, slack_threads  # chat id / thread ts -> conversation
        self._tg_seen = self._slack_seen = 0
        self._count: Counter[int] = Counter()

    def scan(self) -> None:
        """The k-th reply in a conversation is taken as the reply to its message k: a user sends
        message k+1 only after the reply to message k (or a timeout), and private Telegram
        replies and Slack thread replies carry no reference to the message they answer."""
        calls = self.telegram.calls
        for call in calls[self._tg_seen:len(calls)]:
            if call.method == "sendMessage" and call.status == 200:
                conv = self.tg_chats.get(int(call.params["chat_id"]))
                if conv is not None:
                    self._next(conv, call.at)
        self._tg_seen = len(calls)
        slack_calls = self.slack.requests("chat.postMessage")
        for call in slack_calls[self._slack_seen:]:
            conv = self.slack_threads.get(str(call.args.get("thread_ts")))
            if conv is not None:
                self._next(conv, call.at)
        self._slack_seen = len(slack_calls)

    def _next(self, conv: int, at: float) -> None:
        seq = self._count[conv]
        self._count[conv] += 1
        self._record(conv, seq, at)

    def _record(self, conv: int, seq: int, at: float) -> None:
        key = (conv, seq)
        self.tally.replies[key] += 1
        self.tally.replied_at.setdefault(key, at)
        self.tally.event(key).set()

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            self.scan()
            await asyncio.sleep(0.05)
        self.scan()


@dataclass
class Target:
    """Where and how to deliver: the server, the platform secrets, the load's knobs."""

    url: str
    tg_secret: str
    slack_secret: str
    redeliver_share: float
    reply_timeout_s: float
    rng: random.Random


SLACK_ACK_S = 3.0  # Slack counts an event as not delivered when no 2xx came within 3 s
SLACK_RETRIES = 3  # ... and retries it 3 times, marked with X-Slack-Retry-Num (then gives up)
TELEGRAM_ATTEMPTS = 12  # Telegram keeps re-sending an update while it gets no 2xx


async def deliver(client: httpx.AsyncClient, target: Target, tally: Tally, path: str, body: bytes,
                  headers: dict[str, str], retry_headers: dict[str, str] | None = None) -> bool:
    """POST until the server takes it (2xx), as the platforms do: Telegram re-sends an update
    that was not answered 2xx; Slack retries an event not acked 2xx within 3 s, up to 3 times,
    each marked as a retry (the real gaps are about 0 s, 1 min and 5 min; here they are short)."""
    slack = retry_headers is not None
    for attempt in range(1 + SLACK_RETRIES if slack else TELEGRAM_ATTEMPTS):
        extra = {**(retry_headers or {}), "X-Slack-Retry-Num": str(attempt)} if (attempt and slack) else {}
        tally.posts += 1
        try:
            r = await client.post(target.url + path, content=body, headers={**headers, **extra},
                                  timeout=SLACK_ACK_S if slack else 30.0)
            if r.status_code < 300:
                return True
        except httpx.TransportError:  # refused, reset by a killed worker, or (Slack) not acked in 3 s
            pass
        tally.failed_posts += 1
        await asyncio.sleep(min(0.25 * 2 ** attempt, 4.0))
    return False


def _slack_headers(target: Target, body: bytes) -> dict[str, str]:
    stamp = str(int(time.time()))
    signature = SignatureVerifier(target.slack_secret).generate_signature(timestamp=stamp, body=body) or ""
    return {"Content-Type": "application/json", "X-Slack-Request-Timestamp": stamp, "X-Slack-Signature": signature}


def slack_body(conv: int, seq: int, channel: str, thread: str, text: str) -> bytes:
    ts = thread if seq == 0 else f"{thread.split('.')[0]}.{seq:06d}"
    event: dict[str, Any] = {"type": "app_mention", "user": f"U0LOAD{conv:03d}", "text": f"<@{BOT_USER}> {text}",
                             "ts": ts, "channel": channel, "team": TEAM, "event_ts": ts}
    if seq:
        event["thread_ts"] = thread
    return json.dumps({"token": "legacy", "team_id": TEAM, "api_app_id": "A0GROUND", "type": "event_callback",
                       "event_id": f"Ev{conv:03d}x{seq:04d}", "event_time": int(time.time()), "event": event,
                       "authorizations": [{"team_id": TEAM, "user_id": BOT_USER, "is_bot": True}]}).encode()


def telegram_body(conv: int, seq: int, chat_id: int, update_id: int, text: str) -> bytes:
    message = {"message_id": seq + 1, "date": int(time.time()), "text": text,
               "chat": {"id": chat_id, "type": "private", "first_name": f"Load{conv}"},
               "from": {"id": chat_id, "is_bot": False, "first_name": f"Load{conv}"}}
    return json.dumps({"update_id": update_id, "message": message}).encode()


async def conversation(client: httpx.AsyncClient, target: Target, tally: Tally, conv: int, messages: int,
                       platform: str, where: str) -> None:
    """One user's messages, in order; a share of them delivered twice (Telegram) or retried (Slack)."""
    background: list[asyncio.Task[bool]] = []
    for seq in range(messages):
        text = f"{QUESTIONS[(conv + seq) % len(QUESTIONS)]} {tag(conv, seq)}"
        if platform == "telegram":
            body = telegram_body(conv, seq, int(where), conv * 1000 + seq + 1, text)
            path, headers, retry = "/telegram", {TG_SECRET_HEADER: target.tg_secret, "Content-Type": "application/json"}, None
        else:
            body = slack_body(conv, seq, where, f"{1700000000 + conv}.000000", text)
            path, headers = "/slack/events", _slack_headers(target, body)
            retry = {"X-Slack-Retry-Num": "1", "X-Slack-Retry-Reason": "http_timeout"}
        tally.sent_at[(conv, seq)] = time.monotonic()
        event = tally.event((conv, seq))
        if not await deliver(client, target, tally, path, body, headers, retry):
            tally.given_up += 1
        if target.rng.random() < target.redeliver_share:
            tally.redeliveries += 1
            again = {**headers, **(retry or {})}
            if platform == "slack":
                again.update(_slack_headers(target, body))
            background.append(asyncio.create_task(_later(client, target, tally, path, body, again, retry)))
        try:
            await asyncio.wait_for(event.wait(), target.reply_timeout_s)
        except TimeoutError:
            tally.timeouts += 1
    await asyncio.gather(*background)


async def _later(client: httpx.AsyncClient, target: Target, tally: Tally, path: str, body: bytes,
                 headers: dict[str, str], retry_headers: dict[str, str] | None) -> bool:
    """A re-delivery a moment later, so it may reach another worker while the first is answered."""
    await asyncio.sleep(target.rng.uniform(0.0, 1.0))
    return await deliver(client, target, tally, path, body, headers, retry_headers)
