"""Events to the listeners that answer them: mentions, and the kinds of `message` event groundbot
takes (adapters/slack/kinds.py), each routed by its kind's predicate as bolt's listener matcher.
A direct message is a question; a channel thread reply is an expert's answer to a question handed
to people (adapters/slack/escalation.py) or a follow-up of someone groundbot answered there
(adapters/slack/threads.py); a top-level message the channel answers without a mention is one
within the channel's rate, answered quietly (adapters/chat_rules.py). Answering itself is
adapters/slack/answering.py. To add a button, give it an action id in rendering and one
`app.action(...)` line in the `register` of the part it belongs to."""

from __future__ import annotations

import logging
from typing import Any

from slack_bolt import App as BoltApp

from adapters.slack.answering import Answering
from adapters.slack.escalation import Escalation
from adapters.slack.kinds import MessageKinds
from adapters.slack.markup import question_text
from adapters.slack.threads import thread_reply
from adapters.slack.wiring import Wiring

log = logging.getLogger("groundbot.slack")

# the bot events groundbot listens to (docs/slack-app-manifest.json subscribes to each; `message` as
# message.im, message.channels and message.groups)
EVENTS = ("app_mention", "message", "app_home_opened", "assistant_thread_started")


class Questions:
    """Mentions and the message kinds, each to what answers it; every event handled is marked
    done with its once-key when its listener returns."""

    def __init__(self, wiring: Wiring, kinds: MessageKinds, answering: Answering, escalation: Escalation) -> None:
        self.w = wiring
        self.kinds = kinds
        self.answering = answering
        self.escalation = escalation

    def register(self, app: BoltApp) -> None:
        app.event("app_mention")(self.on_mention)
        app.event("message", matchers=[self.kinds.direct])(self.on_direct)
        app.event("message", matchers=[self.kinds.thread_reply])(self.on_thread_reply)
        app.event("message", matchers=[self.kinds.unprompted])(self.on_unprompted)

    def on_mention(self, body: dict[str, Any], event: dict[str, Any], context: dict[str, Any]) -> None:
        with self.w.handled(body):
            self.answering.question(body, event, context.get("bot_user_id") or "", mentioned=True)

    def on_direct(self, body: dict[str, Any], event: dict[str, Any], context: dict[str, Any]) -> None:
        """A direct message is a question."""
        with self.w.handled(body):
            self.answering.question(body, event, context.get("bot_user_id") or "")

    def on_thread_reply(self, body: dict[str, Any], event: dict[str, Any], context: dict[str, Any]) -> None:
        """An expert's answer, else a follow-up of someone groundbot answered in that thread."""
        with self.w.handled(body):
            bot_user_id = context.get("bot_user_id") or ""
            if not self.escalation.expert_answered(event, bot_user_id) and self.follow_up(event, bot_user_id):
                self.answering.question(body, event, bot_user_id)

    def on_unprompted(self, body: dict[str, Any], event: dict[str, Any], context: dict[str, Any]) -> None:
        """A top-level message the channel answers without a mention: answered quietly (a refusal
        is not posted) while the channel is within its rate (counted here, once)."""
        with self.w.handled(body):
            bot_user_id = context.get("bot_user_id") or ""
            text = question_text(str(event.get("text") or ""), bot_user_id)
            policy = self.w.rules.unprompted(str(event.get("channel") or ""), text, event.get("ts"))
            if policy is not None:
                self.answering.question(body, event, bot_user_id, quiet=policy)

    def follow_up(self, event: dict[str, Any], bot_user_id: str) -> bool:
        """A thread reply, without a mention, by someone groundbot has answered in that thread."""
        if self.w.threads is None or not thread_reply(event, bot_user_id):
            return False
        channel, thread, user = str(event.get("channel") or ""), str(event["thread_ts"]), str(event["user"])
        try:
            if channel and self.w.threads.answered(channel, thread, user):
                return True
        except Exception:  # the database is away: a reply nobody can place is left alone, not guessed at
            log.exception("could not look up thread %s of %s; reply %s left alone", thread, channel, event.get("ts"))
            return False
        log.debug("thread reply %s in %s: groundbot has not answered %s there; left alone", event.get("ts"),
                  channel, user)
        return False
