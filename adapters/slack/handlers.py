"""Events and buttons to backend calls: questions (mentions, direct messages, and thread
replies of the people groundbot answered there: adapters/slack/threads.py) answered in their
thread, suggestion and feedback buttons. To add a button, give it an action id in rendering
and one `app.action(...)` line in `register`."""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from cachetools import TTLCache
from slack_bolt import App as BoltApp
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from adapters.chat_rates import ChatRate, MemoryChatRate
from adapters.slack.dedupe import OnceKeys, event_key
from adapters.slack.markup import as_int, question_text, without_emoji
from adapters.slack.rendering import (
    ESCALATE_ACTION,
    FEEDBACK_ACTION,
    FEEDBACK_DOWN,
    FEEDBACK_UP,
    PROMPT_ACTION_PREFIX,
    SUGGEST_ACTION_PREFIX,
    SlackMessage,
    failure_message,
    feedback_view,
    feedback_vote,
    greeting,
    render_decision,
    reply_blocks,
    suggested_prompts,
    tag,
    truncate,
)
from adapters.slack.thread_answers import answer_metadata, answered_before, thread_question
from adapters.slack.threads import AnsweredThreads, person_reply, thread_reply, top_level
from core.catalogue import say, say_each
from core.messages import ChatPolicy, ConversationKey, ExpertReply, Incoming, Platform, message_uid
from core.ports import Backend
from core.render import refusal_in
from core.text.language import language_of

log = logging.getLogger("groundbot.slack")

PLATFORM = Platform.SLACK
WORKING_REACTION = "eyes"
TAKEN_REACTION = "white_check_mark"  # on an expert's reply that went to the admins as an FAQ draft
GROUP_MEMBERS_TTL_S = 300.0  # how long a user group's members are taken as known
# the bot events groundbot listens to (docs/slack-app-manifest.json subscribes to each; `message` as
# message.im, message.channels and message.groups)
EVENTS = ("app_mention", "message", "app_home_opened", "assistant_thread_started")
# assistant.threads.setStatus errors that mean this workspace or app has no statuses: the reaction from then on
NO_STATUS = frozenset({"missing_scope", "not_allowed_token_type", "unknown_method", "feature_not_enabled",
                       "method_not_supported_for_channel_type"})


@dataclass
class Wiring:
    """What every listener needs; `once` may be swapped for shared rows (`groundbot serve`);
    `threads` None: channel thread replies without a mention are not follow-ups; `chat_rate`
    counts the messages each channel has answered without a mention (shared rows in `serve`)."""

    backend: Backend
    client: WebClient
    once: OnceKeys
    refusal_messages: dict[str, str]  # by language ([refusal.messages]); the catalogue's where it has none
    progress_interval_s: float
    threads: AnsweredThreads | None = None
    chat_rate: ChatRate = field(default_factory=MemoryChatRate)
    statuses: bool = True  # False once Slack refused a status for good: the eyes reaction instead
    groups: TTLCache[str, frozenset[str]] = field(
        default_factory=lambda: TTLCache(maxsize=256, ttl=GROUP_MEMBERS_TTL_S))  # user group -> its members
    status_lock: threading.Lock = field(default_factory=threading.Lock)


def ids(body: dict[str, Any]) -> tuple[str, str, str]:
    """(channel, user, team) of an interaction payload."""
    user = body.get("user") or {}
    team = str((body.get("team") or {}).get("id") or user.get("team_id") or "")
    return str((body.get("channel") or {}).get("id", "")), str(user.get("id", "")), team


class Questions:
    """Mentions, direct messages and follow-ups in answered threads are questions; the buttons
    under replies act on them."""

    def __init__(self, wiring: Wiring) -> None:
        self.w = wiring

    def register(self, app: BoltApp) -> None:
        app.event("app_mention")(self.on_mention)
        app.event("message")(self.on_message)
        app.event("app_home_opened")(self.on_home_opened)
        app.event("assistant_thread_started")(self.on_agent_thread)
        app.action(re.compile(rf"^{PROMPT_ACTION_PREFIX}\d+$"))(self.on_prompt)
        app.action(ESCALATE_ACTION)(self.on_escalate)
        app.action(re.compile(rf"^{SUGGEST_ACTION_PREFIX}\d+$"))(self.on_suggestion)
        app.action(FEEDBACK_ACTION)(self.on_feedback)
        app.action(FEEDBACK_UP)(self.on_feedback)  # answers posted before the feedback element
        app.action(FEEDBACK_DOWN)(self.on_feedback)

    def on_mention(self, body: dict[str, Any], event: dict[str, Any], context: dict[str, Any]) -> None:
        try:
            self.question(body, event, context.get("bot_user_id") or "", mentioned=True)
        finally:  # answered (or nothing to answer): no worker takes the event over now
            self.w.once.done(event_key(body))

    def on_home_opened(self, body: dict[str, Any], event: dict[str, Any]) -> None:
        """Someone opened groundbot's Messages tab. In Slack's agent view (the manifest's
        `features.agent_view`) this is where a conversation begins: its suggested prompts are set
        for the conversation (no thread: Slack ignores a thread an agent-view app names), drawn from
        the knowledge base and what people ask, fresh at every opening. The person is also greeted
        once (what groundbot does, with the same questions as buttons)."""
        try:
            user, channel = str(event.get("user") or ""), str(event.get("channel") or "")
            if event.get("tab") != "messages" or not user or not channel:
                return
            prompts = self.w.backend.prompts(PLATFORM, channel)
            self.suggest(channel, prompts)
            if not self.w.once.first(f"greet:{user}"):
                return
            message = greeting(prompts)
            try:
                self.w.client.chat_postMessage(channel=channel, text=message.text, blocks=message.blocks)
            except SlackApiError as exc:
                log.warning("greeting %s failed: %s", user, exc.response.get("error"))
        finally:
            self.w.once.done(event_key(body))

    def on_agent_thread(self, body: dict[str, Any], event: dict[str, Any]) -> None:
        """A conversation opened in the assistant view of an app without the agent view (an app made
        from an older manifest; an agent-view app gets `app_home_opened` instead): its suggested
        prompts, set on its thread, drawn as at an opening of the Messages tab."""
        try:
            thread = event.get("assistant_thread") or {}
            channel, ts = str(thread.get("channel_id") or ""), str(thread.get("thread_ts") or "")
            if channel and ts:
                self.suggest(channel, self.w.backend.prompts(PLATFORM, channel), ts)
        finally:
            self.w.once.done(event_key(body))

    def suggest(self, channel: str, prompts: Sequence[str], thread: str = "") -> None:
        """Set the suggested prompts of a direct-message conversation, or of one of its threads (the
        assistant view's). A workspace without agent features refuses the call: logged, nothing more."""
        if not prompts:
            return
        try:
            self.w.client.assistant_threads_setSuggestedPrompts(channel_id=channel, thread_ts=thread or None,
                                                                prompts=suggested_prompts(prompts))
        except SlackApiError as exc:
            log.info("suggesting prompts in %s failed: %s", channel, exc.response.get("error"))

    def on_prompt(self, ack: Callable[..., Any], body: dict[str, Any], action: dict[str, Any]) -> None:
        """A greeting's prompt button asks that prompt, in the thread of the greeting."""
        ack()
        channel, user, team = ids(body)
        message = body.get("message") or {}
        thread, text = str(message.get("ts") or ""), str(action.get("value") or "").strip()
        if not channel or not thread or not text or not self.w.once.first(f"prompt:{channel}:{thread}:{text}:{user}"):
            return
        msg = Incoming(ConversationKey(PLATFORM, channel, thread), user, text, team_id=team)
        self.answer(msg, channel, thread, picked_by=user)

    def on_message(self, body: dict[str, Any], event: dict[str, Any], context: dict[str, Any]) -> None:
        """Direct messages are questions; a channel message is one when it mentions the bot (as
        `app_mention`), is a thread reply of someone groundbot answered in that thread, or is a
        top-level message of a channel that answers without a mention (answered quietly: a
        refusal is not posted)."""
        try:
            bot_user_id = context.get("bot_user_id") or ""
            if event.get("channel_type") == "im":
                if not event.get("subtype") and not event.get("bot_id"):
                    self.question(body, event, bot_user_id)
            elif self.expert_answered(event, bot_user_id):
                pass
            elif self.follow_up(event, bot_user_id):
                self.question(body, event, bot_user_id)
            elif top_level(event, bot_user_id) and (policy := self.unmentioned(event, bot_user_id)) is not None:
                self.question(body, event, bot_user_id, quiet=policy)
        finally:
            self.w.once.done(event_key(body))

    def policy(self, event: dict[str, Any]) -> ChatPolicy:
        """The policy of the channel an event is in."""
        return self.w.backend.chat_policy(PLATFORM, str(event.get("channel") or ""))

    def expert_answered(self, event: dict[str, Any], bot_user_id: str) -> bool:
        """An expert's reply in a thread whose question was handed to people, taken as an FAQ
        draft (the reply gets a check mark, the expert a private thank-you), or left alone when
        it does not answer yet (an emoji, a question back). False: not an expert's such reply."""
        if not person_reply(event, bot_user_id):
            return False
        channel, thread, user = str(event.get("channel")), str(event.get("thread_ts")), str(event.get("user"))
        experts = self.policy(event).experts
        if not experts or not self.is_expert(user, experts):
            return False
        taken = self.w.backend.expert_reply(PLATFORM, channel, thread, user,
                                            without_emoji(question_text(str(event.get("text") or ""), bot_user_id)))
        if taken != ExpertReply.TAKEN:  # not an answer yet: left alone while the question waits for one
            return taken == ExpertReply.NOT_AN_ANSWER
        self.react("reactions_add", channel, str(event.get("ts")), TAKEN_REACTION)
        try:
            self.w.client.chat_postEphemeral(channel=channel, user=user, thread_ts=thread,
                                             text=say("escalation_draft", language_of(str(event.get("text") or ""))))
        except SlackApiError as exc:
            log.debug("thanking expert %s failed: %s", user, exc.response.get("error"))
        return True

    def is_expert(self, user: str, experts: tuple[str, ...]) -> bool:
        """A member named as an expert, or one of a named user group's members (read with
        usergroups.users.list, which needs usergroups:read; kept a few minutes)."""
        if user in experts:
            return True
        for group in (e for e in experts if e.startswith("S")):
            members = self.w.groups.get(group)
            if members is None:
                try:
                    members = frozenset(self.w.client.usergroups_users_list(usergroup=group).get("users") or [])
                except SlackApiError as exc:
                    log.warning("could not read the members of user group %s (%s)", group, exc.response.get("error"))
                    members = frozenset()
                self.w.groups[group] = members
            if user in members:
                return True
        return False

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
        self.post(handed.chat_id, handed.thread_id, [SlackMessage(text, [{"type": "section",
                                                                         "text": {"type": "mrkdwn", "text": text}}])])

    def answers_unmentioned(self, event: dict[str, Any], bot_user_id: str) -> bool:
        """Whether the channel of a top-level message answers it without a mention (its scope's
        policy: a question mark, or every message); the rate is not counted here."""
        policy = self.w.backend.chat_policy(PLATFORM, str(event.get("channel") or ""))
        return policy.answers(question_text(str(event.get("text") or ""), bot_user_id))

    def unmentioned(self, event: dict[str, Any], bot_user_id: str) -> ChatPolicy | None:
        """The channel's policy when this top-level message is to be answered without a mention
        and the channel is within its rate (counted); None: left alone."""
        channel = str(event.get("channel") or "")
        policy = self.w.backend.chat_policy(PLATFORM, channel)
        if not policy.answers(question_text(str(event.get("text") or ""), bot_user_id)):
            return None
        if not self.w.chat_rate.allow(f"{PLATFORM}:{channel}", policy.per_minute):
            log.warning("channel %s is past %d messages answered without a mention this minute; %s left alone",
                        channel, policy.per_minute, event.get("ts"))
            return None
        return policy

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
        if mentioned and thread != ts and event.get("channel_type") != "im":
            text = thread_question(self.w.client, channel, thread, user, text, bot_user_id)
        # the turn's uid is the message's: answered again after a worker died, it is recorded once
        msg = Incoming(ConversationKey(PLATFORM, channel, thread), user, text, team_id=team,
                       uid=message_uid(PLATFORM, team, channel, ts))
        direct = event.get("channel_type") == "im"  # a direct message's replies are all questions
        if self.w.once.taken_over(key) and answered_before(self.w.client, channel, thread, msg.uid):
            log.warning("message %s was answered before its worker died; not answering it again", key)
            if not direct:
                self.remember_asker(channel, thread, msg.user_id)
            self.w.once.done(key)
            return
        shown = self.start_working(channel, thread, ts, language_of(msg.text))
        try:
            if self.answer(msg, channel, thread, quiet=quiet, ts=ts) and not direct:
                self.remember_asker(channel, thread, msg.user_id)
        finally:
            self.w.once.done(key)  # first: a worker killed after the answer went out must not leave it open
            self.stop_working(shown, channel, thread, ts)

    def start_working(self, channel: str, thread: str, ts: str, lang: str) -> str:
        """Show that groundbot works on a question: Slack's status under the thread ("is searching
        the knowledge base…", its steps rotating) where the app may set one, else the eyes reaction.
        Returns which was shown. The status needs chat:write only; a workspace that refuses it (a
        plan or an app without Slack's agent features) is told once in the log and gets the reaction
        from then on."""
        if self.w.statuses:
            try:
                self.w.client.assistant_threads_setStatus(channel_id=channel, thread_ts=thread,
                                                          status=say("working_status", lang),
                                                          loading_messages=say_each("working_steps", lang))
                return "status"
            except SlackApiError as exc:
                error = str(exc.response.get("error") or "")
                if error in NO_STATUS:
                    with self.w.status_lock:
                        told, self.w.statuses = not self.w.statuses, False
                    if not told:
                        log.warning("Slack refused a status while answering (%s): groundbot shows the eyes "
                                    "reaction instead (docs/slack.md)", error)
                else:
                    log.debug("setting the status of %s failed: %s", thread, error)
        self.react("reactions_add", channel, ts)
        return "reaction"

    def stop_working(self, shown: str, channel: str, thread: str, ts: str) -> None:
        """Clear what start_working showed (Slack clears a status itself once a reply is posted;
        a quiet refusal posts none)."""
        if shown != "status":
            self.react("reactions_remove", channel, ts)
            return
        try:
            self.w.client.assistant_threads_setStatus(channel_id=channel, thread_ts=thread, status="")
        except SlackApiError as exc:
            log.debug("clearing the status of %s failed: %s", thread, exc.response.get("error"))

    def answer(self, msg: Incoming, channel: str, thread: str, picked_by: str = "",
               quiet: ChatPolicy | None = None, ts: str = "") -> bool:
        """Ask the backend and post the decision in the thread; a crash still gets a refusal,
        except in `quiet` (asked without a mention): there a refusal is recorded, not posted.
        True when the reply went out."""
        try:
            decision = self.w.backend.ask(msg)
            refused = decision.refused
            # where nobody asked groundbot, an answer below the unprompted bar stays unsaid like a refusal
            unsure = quiet is not None and not refused and not decision.unprompted
            escalate = refused and not channel.startswith("D") and bool(
                self.w.backend.chat_policy(PLATFORM, channel).experts)  # a direct message has no experts in it
            messages = render_decision(decision, picked_by=picked_by, escalate=escalate)
        except Exception:
            log.exception("answering %s failed", msg.key.as_str())
            refused = True
            lang = language_of(msg.text)
            messages = [failure_message(refusal_in(lang, self.w.refusal_messages), lang)]
            unsure = False
        if quiet is not None and (refused or unsure):
            log.info("message %s of %s asked without a mention was %s; nothing posted", ts, channel,
                     "answered below the unprompted bar" if unsure else "refused")
            if quiet.refusal_reaction:
                self.react("reactions_add", channel, ts, quiet.refusal_reaction)
            return False
        return self.post(channel, thread, messages, answer_metadata(msg.uid))

    def remember_asker(self, channel: str, thread: str, user: str) -> None:
        """Remember that `user` was answered in `thread`: their next reply there is a follow-up."""
        if self.w.threads is None or not user:
            return
        try:
            self.w.threads.remember(channel, thread, user)
        except Exception:  # the database is away: this reply needs a mention, the answer is out
            log.exception("could not remember that %s was answered in thread %s of %s", user, thread, channel)

    def post(self, channel: str, thread: str, messages: Sequence[SlackMessage],
             metadata: dict[str, Any] | None = None) -> bool:
        """Post in the thread; `metadata` marks an answer to a question (adapters/slack/thread_answers.py).
        True when every message was posted."""
        for m in messages:
            try:
                self.w.client.chat_postMessage(channel=channel, thread_ts=thread, text=m.text, blocks=m.blocks,
                                               unfurl_links=False, unfurl_media=False, metadata=metadata)
            except SlackApiError as exc:
                log.error("posting to %s failed: %s", channel, exc.response.get("error"))
                return False
        return True

    def react(self, method: str, channel: str, ts: str, name: str = WORKING_REACTION) -> None:
        """The eyes reaction says "working on it"; failing to add or remove it must not stop the answer."""
        try:
            getattr(self.w.client, method)(channel=channel, timestamp=ts, name=name)
        except SlackApiError as exc:
            log.debug("%s failed: %s", method, exc.response.get("error"))

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
                                         view=feedback_view(turn_id, self.lang_of(message)))
                return
            except SlackApiError as exc:  # no modal: the reason buttons follow privately instead
                log.debug("feedback modal failed: %s", exc.response.get("error"))
        try:
            self.w.client.chat_postEphemeral(channel=channel, user=user, text=reply.text, blocks=reply_blocks(reply),
                                             thread_ts=message.get("thread_ts") or message.get("ts"))
        except SlackApiError as exc:
            log.debug("feedback thank-you failed: %s", exc.response.get("error"))

    @staticmethod
    def lang_of(message: dict[str, Any]) -> str:
        """The language of the answer a button sits under (as the question's, see core/text/language.py)."""
        return language_of(str(message.get("text") or ""))
