"""The kinds of Slack `message` event groundbot takes, each a predicate over the event written
once: bolt routes each kind to its listener with it (a listener's `matchers`), and the middleware
that claims events acknowledges at once, unclaimed, every message no kind takes (most channel
traffic, once the app subscribes to it), so it costs no delivery row.

- a direct message: a person's message in their conversation with the app;
- a thread reply: a person's reply in a channel thread that may be a follow-up without a mention
  (adapters/slack/threads.py; whether groundbot answered that person there is looked up by its
  listener) or an expert's answer to a question handed to people (in a channel with experts);
- an unprompted question: a top-level message the channel's policy answers without a mention
  (adapters/chat_rules.py; its rate is counted by the listener, once).

The kinds read the event and the channel's policy only: nothing is counted, stored or fetched
while bolt decides which listener an event goes to.
"""

from __future__ import annotations

from typing import Any

from adapters.chat_rules import ChatRules
from adapters.slack.markup import question_text
from adapters.slack.threads import person_reply, thread_reply, top_level


def is_direct(channel: str) -> bool:
    """Whether a channel is a direct-message conversation with the app (its id starts with D):
    read the same way from events and from button presses, which carry no channel type."""
    return channel.startswith("D")


def _bot(context: dict[str, Any]) -> str:
    return str(context.get("bot_user_id") or "")


class MessageKinds:
    """The message kinds of one adapter: `rules` give each channel's policy, `follow_ups` says
    whether thread replies without a mention may be follow-ups (threads are remembered)."""

    def __init__(self, rules: ChatRules, follow_ups: bool) -> None:
        self.rules = rules
        self.follow_ups = follow_ups

    def direct(self, event: dict[str, Any]) -> bool:
        """A person's own direct message (not an edit, a join or a file, not a bot's)."""
        return (event.get("type") == "message" and is_direct(str(event.get("channel") or ""))
                and not event.get("subtype") and not event.get("bot_id"))

    def thread_reply(self, event: dict[str, Any], context: dict[str, Any]) -> bool:
        """A person's channel thread reply that may be a follow-up (no mention, follow-ups on)
        or an expert's answer (the channel has experts)."""
        bot = _bot(context)
        if self.follow_ups and thread_reply(event, bot):
            return True
        return person_reply(event, bot) and bool(self.rules.experts(str(event.get("channel") or "")))

    def unprompted(self, event: dict[str, Any], context: dict[str, Any]) -> bool:
        """A person's top-level channel message, addressed to nobody, that the channel's policy
        answers without a mention (its rate aside)."""
        bot = _bot(context)
        return top_level(event, bot) and self.rules.answers_unprompted(
            str(event.get("channel") or ""), question_text(str(event.get("text") or ""), bot))

    def unclaimed(self, body: dict[str, Any], bot_user_id: str) -> bool:
        """A `message` event of no kind: acknowledged at once, unclaimed (the claiming middleware)."""
        event = body.get("event") or {}
        if body.get("type") != "event_callback" or event.get("type") != "message":
            return False
        context = {"bot_user_id": bot_user_id}
        return not (self.direct(event) or self.thread_reply(event, context) or self.unprompted(event, context))
