"""The review loop on Slack: queue cards in the admin channel with buttons, a modal to edit an
answer before approving it, a modal that asks a thumbs-down why, the "this should be
answerable" button under refusals, and the Delivery port that posts reviewed answers in the
original thread. Decisions are made once, in the backend's command layer; this only renders."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from typing import Any

from slack_bolt import App as BoltApp
from slack_sdk.errors import SlackApiError

from adapters.slack.markup import as_int
from adapters.slack.rendering import (
    EDIT_VIEW,
    FEEDBACK_VIEW,
    REASON_ACTION_PREFIX,
    REVIEW_ACTION_PREFIX,
    SlackMessage,
    edit_view,
    render_decision,
    reply_blocks,
    truncate,
    view_value,
)
from adapters.slack.wiring import PLATFORM, Wiring, ids
from core.admin_replies import Action, Reply
from core.messages import ConversationKey, Decision

log = logging.getLogger("groundbot.slack")

class ReviewActions:
    """Review buttons, the edit modal, feedback reasons; posts the results privately."""

    def __init__(self, wiring: Wiring) -> None:
        self.w = wiring

    def register(self, app: BoltApp) -> None:
        app.action(re.compile(rf"^{REVIEW_ACTION_PREFIX}(show|approve|reject|faq)$"))(self.on_review)
        app.action(f"{REVIEW_ACTION_PREFIX}edit")(self.on_edit)
        app.action(re.compile(rf"^{REASON_ACTION_PREFIX}\w+$"))(self.on_reason)
        app.view(EDIT_VIEW)(self.on_edit_submitted)
        app.view(FEEDBACK_VIEW)(self.on_feedback_submitted)

    def tell(self, channel: str, user: str, reply: Reply, thread: str = "") -> None:
        """A reply for one person: ephemeral in the channel, or a direct message without one."""
        text, blocks = truncate(reply.text, 3000), reply_blocks(reply)
        try:
            if channel:
                self.w.client.chat_postEphemeral(channel=channel, user=user, text=text, blocks=blocks,
                                                 thread_ts=thread or None)
            else:
                self.w.client.chat_postMessage(channel=user, text=text, blocks=blocks)
        except SlackApiError as exc:
            log.warning("could not tell %s: %s", user, exc.response.get("error"))

    def on_review(self, ack: Callable[..., Any], body: dict[str, Any], action: dict[str, Any]) -> None:
        ack()
        channel, user, _ = ids(body)
        item = as_int(action.get("value"))
        verb = str(action.get("action_id", "")).removeprefix(REVIEW_ACTION_PREFIX)
        if item is None or not self.w.once.first(f"review:{item}:{verb}:{user}:{action.get('action_ts')}"):
            return
        self.tell(channel, user, self.w.backend.review(PLATFORM, user, verb, item))

    def on_edit(self, ack: Callable[..., Any], body: dict[str, Any], action: dict[str, Any]) -> None:
        """Admins get the modal with the draft in it; anyone else the refusal (nothing opens)."""
        ack()
        channel, user, _ = ids(body)
        item = as_int(action.get("value"))
        if item is None:
            return
        shown = self.w.backend.review(PLATFORM, user, Action.SHOW, item)
        if not shown.ok:
            self.tell(channel, user, shown)
            return
        self.w.client.views_open(trigger_id=body.get("trigger_id", ""), view=edit_view(item, shown.prefill))

    def on_edit_submitted(self, ack: Callable[..., Any], body: dict[str, Any], view: dict[str, Any]) -> None:
        ack()
        user = str((body.get("user") or {}).get("id", ""))
        item = as_int(view.get("private_metadata"))
        if item is not None:
            self.tell("", user, self.w.backend.review(PLATFORM, user, Action.EDIT, item, view_value(view, "answer")))

    def on_reason(self, ack: Callable[..., Any], body: dict[str, Any], action: dict[str, Any]) -> None:
        """"This should be answerable" under a refusal: the turn joins the queue."""
        ack()
        channel, user, _ = ids(body)
        turn = as_int(action.get("value"))
        reason = str(action.get("action_id", "")).removeprefix(REASON_ACTION_PREFIX)
        message = body.get("message") or {}
        if turn is not None:
            reply = self.w.backend.feedback(user, turn, -1, reason)
            self.tell(channel, user, reply, str(message.get("thread_ts") or message.get("ts") or ""))

    def on_feedback_submitted(self, ack: Callable[..., Any], body: dict[str, Any], view: dict[str, Any]) -> None:
        ack()
        user = str((body.get("user") or {}).get("id", ""))
        turn = as_int(view.get("private_metadata"))
        if turn is not None:
            self.tell("", user, self.w.backend.feedback(user, turn, -1, view_value(view, "reason"), view_value(view, "comment")))


class SlackDelivery:
    """Delivery port: reviewed answers in their original thread, queue cards in the admin channel."""

    def __init__(self, wiring: Wiring, admin_channel: str) -> None:
        self.w = wiring
        self.admin_channel = admin_channel

    def _post(self, channel: str, thread: str, messages: list[SlackMessage]) -> None:
        for m in messages:
            self.w.client.chat_postMessage(channel=channel, text=m.text, blocks=m.blocks, unfurl_links=False,
                                           thread_ts=thread or None)

    def deliver(self, key: ConversationKey, decision: Decision) -> None:
        self._post(key.chat_id, key.thread_id, render_decision(decision))

    def notify(self, reply: Reply, users: Sequence[str] = ()) -> None:
        """To the admin channel, and to each scope admin (`users`) in their direct messages with
        the app (chat.postMessage to a user id)."""
        message = [SlackMessage(truncate(reply.text, 3000), reply_blocks(reply))]
        for channel in ([self.admin_channel] if self.admin_channel else []) + list(dict.fromkeys(users)):
            self._post(channel, "", message)
