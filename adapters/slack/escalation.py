"""A refused question handed to people on Slack: "Ask a person" tags the channel's experts (members,
or user groups) in the question's thread, and an expert's reply there that answers goes to the
admins as an FAQ draft (bot/services/escalation.py decides both, once for every worker)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from cachetools import TTLCache
from slack_bolt import App as BoltApp
from slack_sdk.errors import SlackApiError

from adapters.slack.markup import as_int, question_text, without_emoji
from adapters.slack.rendering import ESCALATE_ACTION, SlackMessage, section, tag, truncate
from adapters.slack.threads import person_reply
from adapters.slack.wiring import PLATFORM, Wiring, ids
from core.catalogue import say
from core.messages import ExpertReply
from core.text.language import language_of

log = logging.getLogger("groundbot.slack")

TAKEN_REACTION = "white_check_mark"  # on an expert's reply that went to the admins as an FAQ draft
GROUP_MEMBERS_TTL_S = 300.0  # how long a user group's members are taken as known


class Escalation:
    """The "Ask a person" button, and experts' replies in the threads of questions handed to them."""

    def __init__(self, wiring: Wiring) -> None:
        self.w = wiring
        # user group -> its members (usergroups.users.list, which needs usergroups:read)
        self.groups: TTLCache[str, frozenset[str]] = TTLCache(maxsize=256, ttl=GROUP_MEMBERS_TTL_S)

    def register(self, app: BoltApp) -> None:
        app.action(ESCALATE_ACTION)(self.on_escalate)

    def on_escalate(self, ack: Callable[..., Any], body: dict[str, Any], action: dict[str, Any]) -> None:
        """"Ask a person": the turn's chat's experts are tagged in its thread, once per turn (a
        second press, here or on another worker, is told they were asked)."""
        ack()
        turn, (channel, user, _) = as_int(action.get("value")), ids(body)
        if turn is None or not user or not self.w.once.first(f"escalate:{turn}:{user}:{action.get('action_ts')}"):
            return
        handed = self.w.backend.escalate(PLATFORM, user, turn)
        if handed is None:
            return
        lang = language_of(handed.question)
        if not handed.new:
            try:
                self.w.client.chat_postEphemeral(channel=channel or handed.chat_id, user=user,
                                                 text=say("escalated_again", lang), thread_ts=handed.thread_id or None)
            except SlackApiError as exc:
                log.debug("telling %s failed: %s", user, exc.response.get("error"))
            return
        text = say("escalated", lang, experts=" ".join(tag(e) for e in handed.experts), asker=f"<@{user}>",
                   question=truncate(handed.question, 2000))
        self.w.post(handed.chat_id, handed.thread_id, [SlackMessage(text, [section(text)])])

    def expert_answered(self, event: dict[str, Any], bot_user_id: str) -> bool:
        """An expert's reply in a thread whose question was handed to people, taken as an FAQ
        draft (the reply gets a check mark, the expert a private thank-you), or left alone when
        it does not answer yet (an emoji, a question back). False: not an expert's such reply."""
        if not person_reply(event, bot_user_id):
            return False
        channel, thread, user = str(event.get("channel")), str(event.get("thread_ts")), str(event.get("user"))
        experts = self.w.rules.experts(channel)
        if not experts or not self.is_expert(user, experts):
            return False
        text = str(event.get("text") or "")
        taken = self.w.backend.expert_reply(PLATFORM, channel, thread, user,
                                            without_emoji(question_text(text, bot_user_id)))
        if taken != ExpertReply.TAKEN:  # not an answer yet: left alone while the question waits for one
            return taken == ExpertReply.NOT_AN_ANSWER
        self.w.react("reactions_add", channel, str(event.get("ts")), TAKEN_REACTION)
        try:
            self.w.client.chat_postEphemeral(channel=channel, user=user, thread_ts=thread,
                                             text=say("escalation_draft", language_of(text)))
        except SlackApiError as exc:
            log.debug("thanking expert %s failed: %s", user, exc.response.get("error"))
        return True

    def is_expert(self, user: str, experts: tuple[str, ...]) -> bool:
        """A member named as an expert, or one of a named user group's members (kept a few minutes)."""
        if user in experts:
            return True
        for group in (e for e in experts if e.startswith("S")):
            members = self.groups.get(group)
            if members is None:
                try:
                    members = frozenset(self.w.client.usergroups_users_list(usergroup=group).get("users") or [])
                except SlackApiError as exc:
                    log.warning("could not read the members of user group %s (%s)", group, exc.response.get("error"))
                    members = frozenset()
                self.groups[group] = members
            if user in members:
                return True
        return False
