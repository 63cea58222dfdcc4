"""A question answered in its thread: the sign that groundbot works on it, the backend's decision
posted (where nobody asked groundbot, a refusal stays unsaid: adapters/chat_rules.py), the asker
remembered for follow-ups; and the buttons under replies that act on a turn (suggestions, thumbs)."""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable
from typing import Any

from slack_bolt import App as BoltApp
from slack_sdk.errors import SlackApiError

from adapters.slack.kinds import is_direct
from adapters.slack.markup import as_int, question_text
from adapters.slack.rendering import (
    FEEDBACK_ACTION,
    FEEDBACK_DOWN,
    FEEDBACK_UP,
    SUGGEST_ACTION_PREFIX,
    failure_message,
    feedback_view,
    feedback_vote,
    render_decision,
    reply_blocks,
)
from adapters.slack.thread_answers import answer_metadata, answered_before, thread_question
from adapters.slack.wiring import PLATFORM, Wiring, ids
from core.catalogue import say, say_each
from core.messages import ChatPolicy, ConversationKey, Decision, Incoming, message_uid
from core.render import refusal_in
from core.text.language import language_of

log = logging.getLogger("groundbot.slack")

# assistant.threads.setStatus errors that mean this workspace or app has no statuses: the reaction from then on
NO_STATUS = frozenset({"missing_scope", "not_allowed_token_type", "unknown_method", "feature_not_enabled",
                       "method_not_supported_for_channel_type"})


class Working:
    """Shows that groundbot works on a question: Slack's status under the thread ("is searching
    the knowledge base…", its steps rotating) where the app may set one, else the eyes reaction.
    The status needs chat:write only; a workspace that refuses it (a plan or an app without
    Slack's agent features) is told once in the log and gets the reaction from then on."""

    def __init__(self, wiring: Wiring) -> None:
        self.w = wiring
        self.statuses = True  # False once Slack refused a status for good
        self._lock = threading.Lock()

    def start(self, channel: str, thread: str, ts: str, lang: str) -> str:
        """Show the status or the reaction; returns which was shown."""
        if self.statuses:
            try:
                self.w.client.assistant_threads_setStatus(channel_id=channel, thread_ts=thread,
                                                          status=say("working_status", lang),
                                                          loading_messages=say_each("working_steps", lang))
                return "status"
            except SlackApiError as exc:
                error = str(exc.response.get("error") or "")
                if error in NO_STATUS:
                    with self._lock:
                        told, self.statuses = not self.statuses, False
                    if not told:
                        log.warning("Slack refused a status while answering (%s): groundbot shows the eyes "
                                    "reaction instead (docs/slack.md)", error)
                else:
                    log.debug("setting the status of %s failed: %s", thread, error)
        self.w.react("reactions_add", channel, ts)
        return "reaction"

    def stop(self, shown: str, channel: str, thread: str, ts: str) -> None:
        """Clear what `start` showed (Slack clears a status itself once a reply is posted; a quiet
        refusal posts none)."""
        if shown != "status":
            self.w.react("reactions_remove", channel, ts)
            return
        try:
            self.w.client.assistant_threads_setStatus(channel_id=channel, thread_ts=thread, status="")
        except SlackApiError as exc:
            log.debug("clearing the status of %s failed: %s", thread, exc.response.get("error"))


class Answering:
    """Asks the backend and posts its decision in the question's thread."""

    def __init__(self, wiring: Wiring) -> None:
        self.w = wiring
        self.working = Working(wiring)

    def register(self, app: BoltApp) -> None:
        app.action(re.compile(rf"^{SUGGEST_ACTION_PREFIX}\d+$"))(self.on_suggestion)
        app.action(FEEDBACK_ACTION)(self.on_feedback)
        app.action(FEEDBACK_UP)(self.on_feedback)  # answers posted before the feedback element
        app.action(FEEDBACK_DOWN)(self.on_feedback)

    def question(self, body: dict[str, Any], event: dict[str, Any], bot_user_id: str,
                 quiet: ChatPolicy | None = None, mentioned: bool = False) -> None:
        """Answer one message in its thread; `quiet`: asked without a mention, so a refusal is
        recorded but not posted (the policy's reaction at most); `mentioned` inside a thread
        someone else started: that thread's question is what is asked (thread_question)."""
        channel, ts = str(event.get("channel", "")), str(event.get("ts", ""))
        key = f"message:{channel}:{ts}"  # one message may come as app_mention and as message
        if not channel or not ts or event.get("bot_id") or not self.w.once.claim(key):
            return
        thread = str(event.get("thread_ts") or ts)
        team = str(body.get("team_id") or event.get("team") or "")
        user, text = str(event.get("user", "")), question_text(str(event.get("text", "")), bot_user_id)
        direct = is_direct(channel)  # a direct message's replies are all questions
        if mentioned and thread != ts and not direct:
            text = thread_question(self.w.client, channel, thread, user, text, bot_user_id)
        # the turn's uid is the message's: answered again after a worker died, it is recorded once
        msg = Incoming(ConversationKey(PLATFORM, channel, thread), user, text, team_id=team,
                       uid=message_uid(PLATFORM, team, channel, ts))
        if self.w.once.taken_over(key) and answered_before(self.w.client, channel, thread, msg.uid):
            log.warning("message %s was answered before its worker died; not answering it again", key)
            if not direct:
                self.remember_asker(channel, thread, msg.user_id)
            self.w.once.done(key)
            return
        shown = self.working.start(channel, thread, ts, language_of(msg.text))
        try:
            if self.answer(msg, channel, thread, quiet=quiet, ts=ts) and not direct:
                self.remember_asker(channel, thread, msg.user_id)
        finally:
            self.w.once.done(key)  # first: a worker killed after the answer went out must not leave it open
            self.working.stop(shown, channel, thread, ts)

    def answer(self, msg: Incoming, channel: str, thread: str, picked_by: str = "",
               quiet: ChatPolicy | None = None, ts: str = "") -> bool:
        """Ask the backend and post the decision in the thread; a crash still gets a refusal,
        except in `quiet` (asked without a mention): there a refusal is recorded, not posted.
        True when the reply went out."""
        decision: Decision | None
        try:
            decision = self.w.backend.ask(msg)
            messages = render_decision(decision, picked_by=picked_by,
                                       escalate=self.w.rules.offers_person(decision, channel, is_direct(channel)))
        except Exception:
            log.exception("answering %s failed", msg.key.as_str())
            decision, lang = None, language_of(msg.text)
            messages = [failure_message(refusal_in(lang, self.w.refusal_messages), lang)]
        if quiet is not None and self.w.rules.unsaid(decision, channel, ts):
            if quiet.refusal_reaction:
                self.w.react("reactions_add", channel, ts, quiet.refusal_reaction)
            return False
        return self.w.post(channel, thread, messages, answer_metadata(msg.uid))

    def remember_asker(self, channel: str, thread: str, user: str) -> None:
        """Remember that `user` was answered in `thread`: their next reply there is a follow-up."""
        if self.w.threads is None or not user:
            return
        try:
            self.w.threads.remember(channel, thread, user)
        except Exception:  # the database is away: this reply needs a mention, the answer is out
            log.exception("could not remember that %s was answered in thread %s of %s", user, thread, channel)

    def on_suggestion(self, ack: Callable[..., Any], body: dict[str, Any], action: dict[str, Any]) -> None:
        """A suggestion button asks that suggestion (by its stored id) in the refusal's thread."""
        ack()
        sid = as_int(action.get("value"))
        channel, user, team = ids(body)
        message, container = body.get("message") or {}, body.get("container") or {}
        thread = str(message.get("thread_ts") or container.get("thread_ts") or message.get("ts") or "")
        if sid is None or not channel or not thread:
            return
        if not self.w.once.first(f"pick:{channel}:{message.get('ts')}:{sid}:{user}"):
            return  # a double click
        label = str((action.get("text") or {}).get("text", ""))
        msg = Incoming(ConversationKey(PLATFORM, channel, thread), user, label, team_id=team, suggestion_id=sid)
        if self.answer(msg, channel, thread, picked_by=user):
            self.remember_asker(channel, thread, user)

    def on_feedback(self, ack: Callable[..., Any], body: dict[str, Any], action: dict[str, Any]) -> None:
        """Thumbs up/down are stored with the turn; a thumbs-down opens a modal that asks why
        (its answer puts the turn in the review queue). The voter's replies are private."""
        ack()
        vote = feedback_vote(action)
        channel, user, _ = ids(body)
        message = body.get("message") or {}
        if vote is None or not user:
            return
        turn_id, value = vote
        reply = self.w.backend.feedback(user, turn_id, value)
        if value < 0 and reply.ok:
            try:
                self.w.client.views_open(trigger_id=str(body.get("trigger_id", "")),
                                         view=feedback_view(turn_id, language_of(str(message.get("text") or ""))))
                return
            except SlackApiError as exc:  # no modal: the reason buttons follow privately instead
                log.debug("feedback modal failed: %s", exc.response.get("error"))
        try:
            self.w.client.chat_postEphemeral(channel=channel, user=user, text=reply.text, blocks=reply_blocks(reply),
                                             thread_ts=message.get("thread_ts") or message.get("ts"))
        except SlackApiError as exc:
            log.debug("feedback thank-you failed: %s", exc.response.get("error"))
