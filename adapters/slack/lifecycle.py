"""The slack-bolt App: its Web API client (slack-sdk retries 429s and dropped connections),
the thread pool answers run on after each ack, the listeners, and the two ways in (Socket
Mode, or the Events API over HTTP)."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from slack_bolt import App as BoltApp
from slack_bolt.adapter.socket_mode import SocketModeHandler
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.builtin_handlers import ConnectionErrorRetryHandler, RateLimitErrorRetryHandler

from adapters.chat_rules import ChatRate, ChatRules
from adapters.slack.admin import AdminCommands
from adapters.slack.agent import AgentSurface
from adapters.slack.answering import Answering
from adapters.slack.dedupe import OnceFilter, OnceKeys, skip_redelivered
from adapters.slack.escalation import Escalation
from adapters.slack.handlers import Questions
from adapters.slack.http import SlackHTTPServer
from adapters.slack.kinds import MessageKinds
from adapters.slack.review import ReviewActions, SlackDelivery
from adapters.slack.threads import AnsweredThreads
from adapters.slack.wiring import PLATFORM, Wiring
from core.ports import Backend

log = logging.getLogger("groundbot.slack")

class SlackAdapter:
    """Wires a groundbot backend into a slack-bolt App.

    `api_base_url` points the Web API client elsewhere (GovSlack, a proxy, a local
    stand-in); 429 answers are retried after their Retry-After by slack-sdk itself. With
    `threads` (who was answered in which channel thread, shared rows), a thread reply of someone
    groundbot answered there is a follow-up without a mention (adapters/slack/threads.py);
    `chat_rate` counts each channel's messages answered without a mention (adapters/chat_rules.py);
    `once` says which events, messages and presses were handled (`groundbot serve` passes rows
    every worker shares). Everything is given here: nothing is set on the adapter after.
    """

    def __init__(self, backend: Backend, *, bot_token: str, signing_secret: str = "", api_base_url: str = "",
                 refusal_messages: Mapping[str, str] | None = None, rate_limit_retries: int = 3,
                 progress_interval_s: float = 1.0, client_timeout_s: float = 30.0, workers: int = 8,
                 once: OnceKeys | None = None, admin_channel: str = "",
                 threads: AnsweredThreads | None = None, chat_rate: ChatRate | None = None) -> None:
        if not bot_token:
            raise ValueError("a Slack bot token (xoxb-...) is required")
        self.backend = backend
        self.signing_secret = signing_secret
        retry = [ConnectionErrorRetryHandler(), RateLimitErrorRetryHandler(max_retry_count=rate_limit_retries)]
        client_args: dict[str, Any] = {"base_url": api_base_url} if api_base_url else {}
        self.client = WebClient(token=bot_token, timeout=int(client_timeout_s), retry_handlers=retry, **client_args)
        rules = ChatRules(backend, PLATFORM, chat_rate)
        self.wiring = Wiring(backend, self.client, once or OnceFilter(), rules, dict(refusal_messages or {}),
                             progress_interval_s, threads)
        # the work after each ack runs here; close() lets in-flight answers finish
        self.executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="groundbot-slack")
        # auth.test runs here: a bad token or an unreachable API fails at start-up, not on the first message
        self.app = BoltApp(name="groundbot", client=self.client, signing_secret=signing_secret, logger=log,
                           listener_executor=self.executor)
        self.check_scopes()
        kinds = MessageKinds(rules, follow_ups=threads is not None)
        # a message of no kind is acked at once, unclaimed; the rest are claimed, then routed by kind
        self.app.use(skip_redelivered(self.wiring.once, kinds.unclaimed))
        answering, escalation = Answering(self.wiring), Escalation(self.wiring)
        for part in (Questions(self.wiring, kinds, answering, escalation), answering, escalation,
                     AgentSurface(self.wiring, answering), AdminCommands(self.wiring), ReviewActions(self.wiring)):
            part.register(self.app)
        # reviewed answers go to their thread, new queue items to the admin channel, from here
        backend.register_delivery(PLATFORM, SlackDelivery(self.wiring, admin_channel))

    def check_scopes(self) -> None:
        """Say once, at start, what a token without the channel history scopes cannot do (Slack names
        a token's scopes in the x-oauth-scopes header of every Web API answer): without
        channels:history and groups:history no channel message reaches groundbot but its mentions (no
        follow-ups, no answers without a mention). The status while it works needs chat:write only
        (assistant.threads.setStatus, since Slack's change of 2026-03-05), which groundbot always has:
        it is tried, and the eyes reaction stands in only where Slack refuses it. An answer without
        the header says nothing, and nothing is assumed."""
        try:
            granted = self.client.auth_test().headers.get("x-oauth-scopes")
        except SlackApiError as exc:
            log.warning("auth.test failed: %s", exc.response.get("error"))
            return
        if granted is None:
            return
        scopes = {s.strip() for s in str(granted).split(",")}
        missing = sorted({"channels:history", "groups:history"} - scopes)
        if missing:
            log.warning("the Slack token lacks %s: in those channels groundbot answers mentions only, with no "
                        "follow-ups without a mention and no answers to questions without one (docs/slack.md)",
                        " and ".join(missing))

    def close(self) -> None:
        """Wait for answers already being worked on, then stop taking work."""
        self.executor.shutdown(wait=True)

    def socket_mode(self, app_token: str) -> SocketModeHandler:
        """A Socket Mode handler; `.start()` blocks, `.connect()`/`.close()` for embedding."""
        if not app_token:
            raise ValueError("Socket Mode needs an app-level token (xapp-...)")
        return SocketModeHandler(self.app, app_token, web_client=self.client)

    def http_server(self, host: str = "0.0.0.0", port: int = 3000, path: str = "/slack/events") -> SlackHTTPServer:
        """The Events API endpoint; requests without a valid signature get 401."""
        if not self.signing_secret:
            raise ValueError("HTTP mode needs the Slack signing secret")
        return SlackHTTPServer(self.app, host, port, path)
