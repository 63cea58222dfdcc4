"""Channel thread replies that continue a conversation with groundbot without mentioning it.

Once groundbot has answered someone in a channel thread, that person's next plain message in
the thread (a `message` event with `thread_ts`, from the `message.channels` / `message.groups`
subscriptions) is a follow-up of the thread's conversation. Everyone else in the thread is
left to talk among themselves: they mention the bot once to ask it, and from then on they
continue without a mention too. Who groundbot has answered in which thread is kept by the
composition root (database rows every worker shares); without it there are no such follow-ups.

Which of these messages reach a listener at all is adapters/slack/kinds.py. What is never a
follow-up: a message that is not a thread reply, any subtype but a reply also
sent to the channel (edits, deletions, joins, files, bots' posts), a bot's message (groundbot's
own included), a message that mentions the bot (that one comes as `app_mention` too and is
answered from there, once), and a message that mentions someone else or the channel (it is
addressed to them).
"""

from __future__ import annotations

import re
from typing import Any, Protocol

CHANNEL_TYPES = ("channel", "group")  # public and private channels (message.channels, message.groups)
REPLY_SUBTYPES = ("", "thread_broadcast")  # a plain reply, or one "also sent to the channel"


class AnsweredThreads(Protocol):
    """Who groundbot has answered in which channel thread, shared by every worker."""

    def remember(self, channel: str, thread: str, user: str) -> None:
        """groundbot answered `user` in `thread` of `channel`."""
        ...

    def answered(self, channel: str, thread: str, user: str) -> bool:
        """Whether groundbot has answered `user` in `thread` of `channel`."""
        ...


_ADDRESSED = re.compile(r"<[@!]")  # a user (<@U123>), the channel, here, a user group (<!here>, <!subteam^S1>)


def person_reply(event: dict[str, Any], bot_user_id: str) -> bool:
    """A person's reply in a channel thread (not its first message), whoever it mentions: where
    an expert's answer to a question handed to people may be."""
    ts, thread = str(event.get("ts") or ""), str(event.get("thread_ts") or "")
    user = str(event.get("user") or "")
    return (event.get("type") == "message" and event.get("channel_type") in CHANNEL_TYPES
            and str(event.get("subtype") or "") in REPLY_SUBTYPES
            and not event.get("bot_id") and not event.get("bot_profile")
            and bool(user) and user != bot_user_id and bool(ts) and bool(thread) and thread != ts
            and bool(str(event.get("text") or "").strip()))


def thread_reply(event: dict[str, Any], bot_user_id: str) -> bool:
    """Whether a channel `message` event may be a follow-up without a mention, from the event alone:
    a person's reply in a thread (not its first message), mentioning nobody (the bot's mention
    is answered as `app_mention`; anyone else's means it is addressed to them). Whether
    groundbot answered that person in that thread is asked of `AnsweredThreads` after."""
    return person_reply(event, bot_user_id) and _ADDRESSED.search(str(event.get("text") or "")) is None


def top_level(event: dict[str, Any], bot_user_id: str) -> bool:
    """Whether a channel `message` event is a person's own new message (not a thread reply, not
    an edit, a join or a file, not a bot's), addressed to nobody in particular: what a channel
    that answers without a mention may answer (the bot's own mention comes as `app_mention`)."""
    ts, thread = str(event.get("ts") or ""), str(event.get("thread_ts") or "")
    user = str(event.get("user") or "")
    return (event.get("type") == "message" and event.get("channel_type") in CHANNEL_TYPES
            and not event.get("subtype") and not event.get("bot_id") and not event.get("bot_profile")
            and bool(user) and user != bot_user_id and bool(ts) and thread in ("", ts)
            and bool(str(event.get("text") or "").strip())
            and _ADDRESSED.search(str(event.get("text") or "")) is None)
