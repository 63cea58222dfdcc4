"""Slack adapter: slack-bolt listeners that turn Slack events into core messages.

One bolt App serves both transports: Socket Mode (an outbound websocket, the default) and
the HTTP Events API (request signatures checked by bolt). Listeners acknowledge at once and
do the work afterwards on bolt's worker threads, because Slack retries anything not acked
within 3 seconds. This module knows nothing of bot/ or storage/: it gets a `Backend` and
plain settings values from its caller.
"""

from __future__ import annotations

import logging
import re
import shlex
import socket
import threading
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

import uvicorn
from slack_bolt import App as BoltApp
from slack_bolt import BoltResponse
from slack_bolt.adapter.socket_mode import SocketModeHandler
from slack_bolt.adapter.starlette.handler import to_bolt_request, to_starlette_response
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.builtin_handlers import ConnectionErrorRetryHandler, RateLimitErrorRetryHandler
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from adapters.slack_blocks import (
    FEEDBACK_DOWN,
    FEEDBACK_UP,
    SUGGEST_ACTION_PREFIX,
    SlackMessage,
    failure_message,
    render_decision,
    review_text,
    stats_text,
)
from core.messages import ConversationKey, Incoming
from core.ports import Backend, PathNotAllowed

log = logging.getLogger("groundbot.slack")

PLATFORM = "slack"
REINGEST_COMMAND = "/groundbot-reingest"
STATS_COMMAND = "/groundbot-stats"
REVIEW_COMMAND = "/groundbot-review"
WORKING_REACTION = "eyes"
DEFAULT_REFUSAL = "I can't answer that from the knowledge base I have."
INTERNAL_ERROR = "groundbot hit an internal error while answering; the error has been logged for the admins."
MAX_HTTP_BODY = 1_000_000  # Slack payloads are a few KB; anything this big is not from Slack


class OnceKeys(Protocol):
    """Says whether a key (event id, message ts, button press) is offered for the first time."""

    def first(self, key: str) -> bool: ...


class OnceFilter:
    """Remembers keys for `ttl` seconds so a redelivered Slack event is handled only once.

    Slack redelivers an event (same event id) when it did not see the ack in time; the
    same user message can also arrive as both `app_mention` and `message`. Memory is per
    process, which covers Slack's retries (they come within minutes to the same app).
    """

    def __init__(self, ttl: float = 3600.0, max_keys: int = 50_000,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl = ttl
        self.max_keys = max_keys
        self.clock = clock
        self._seen: OrderedDict[str, float] = OrderedDict()
        self._lock = threading.Lock()

    def first(self, key: str) -> bool:
        """True the first time `key` is offered (within the ttl), False on repeats."""
        now = self.clock()
        with self._lock:
            while self._seen and (len(self._seen) >= self.max_keys or next(iter(self._seen.values())) < now - self.ttl):
                self._seen.popitem(last=False)
            if key in self._seen:
                return False
            self._seen[key] = now
            return True


_MENTION = re.compile(r"<@([A-Z0-9]+)(?:\|([^>]*))?>")
_CHANNEL = re.compile(r"<#([A-Z0-9]+)(?:\|([^>]*))?>")
_SPECIAL = re.compile(r"<!([^|>]+)(?:\|([^>]*))?>")
_LINK = re.compile(r"<([^@#!|>][^|>]*)(?:\|([^>]*))?>")


def question_text(text: str, bot_user_id: str = "") -> str:
    """Slack message markup -> the question as typed: the bot's mention dropped, links unwrapped."""

    def mention(m: re.Match[str]) -> str:
        return "" if m.group(1) == bot_user_id else "@" + (m.group(2) or m.group(1))

    text = _MENTION.sub(mention, text)
    text = _CHANNEL.sub(lambda m: "#" + (m.group(2) or m.group(1)), text)
    text = _SPECIAL.sub(lambda m: "@" + (m.group(2) or m.group(1)), text)
    text = _LINK.sub(lambda m: m.group(2) or m.group(1), text)
    text = text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
    return re.sub(r"[ \t]+", " ", text).strip()


def _int(value: Any) -> int | None:
    try:
        return int(str(value))
    except (TypeError, ValueError):
        return None


class SlackAdapter:
    """Wires a groundbot backend into a slack-bolt App.

    `api_base_url` points the Web API client elsewhere (GovSlack, a proxy, a local
    stand-in); 429 answers are retried after their Retry-After by slack-sdk itself.
    """

    def __init__(self, backend: Backend, *, bot_token: str, signing_secret: str = "", api_base_url: str = "",
                 refusal_message: str = DEFAULT_REFUSAL, rate_limit_retries: int = 3,
                 progress_interval_s: float = 1.0, client_timeout_s: float = 30.0, workers: int = 8,
                 once: OnceKeys | None = None) -> None:
        if not bot_token:
            raise ValueError("a Slack bot token (xoxb-...) is required")
        self.backend = backend
        self.signing_secret = signing_secret
        self.refusal_message = refusal_message
        self.progress_interval_s = progress_interval_s
        self.once: OnceKeys = once or OnceFilter()  # `groundbot serve` passes rows shared by every worker
        retry = [ConnectionErrorRetryHandler(), RateLimitErrorRetryHandler(max_retry_count=rate_limit_retries)]
        client_args: dict[str, Any] = {"base_url": api_base_url} if api_base_url else {}
        self.client = WebClient(token=bot_token, timeout=int(client_timeout_s), retry_handlers=retry, **client_args)
        # the work after each ack runs here; close() lets in-flight answers finish
        self.executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="groundbot-slack")
        # auth.test runs here: a bad token or an unreachable API fails at start-up, not on the first message
        self.app = BoltApp(name="groundbot", client=self.client, signing_secret=signing_secret, logger=log,
                           listener_executor=self.executor)
        self._register()

    def close(self) -> None:
        """Wait for answers already being worked on, then stop taking work."""
        self.executor.shutdown(wait=True)

    # -- wiring -----------------------------------------------------------------
    def _register(self) -> None:
        app = self.app
        app.use(self._skip_redelivered)
        app.event("app_mention")(self._on_mention)
        app.event("message")(self._on_message)
        app.action(re.compile(rf"^{SUGGEST_ACTION_PREFIX}\d+$"))(self._on_suggestion)
        app.action(FEEDBACK_UP)(self._on_feedback)
        app.action(FEEDBACK_DOWN)(self._on_feedback)
        app.command(REINGEST_COMMAND)(self._on_reingest)
        app.command(STATS_COMMAND)(self._on_stats)
        app.command(REVIEW_COMMAND)(self._on_review)

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

    # -- middleware ---------------------------------------------------------------
    def _skip_redelivered(self, body: dict[str, Any], next_: Callable[[], BoltResponse]) -> BoltResponse:
        """Ack a redelivered event (same event id) without handling it again."""
        event_id = body.get("event_id") if body.get("type") == "event_callback" else None
        if event_id and not self.once.first(f"event:{event_id}"):
            log.info("skipping redelivered event %s", event_id)
            return BoltResponse(status=200, body="")
        return next_()

    # -- questions ----------------------------------------------------------------
    def _on_mention(self, body: dict[str, Any], event: dict[str, Any], context: dict[str, Any]) -> None:
        self._question(body, event, context.get("bot_user_id") or "")

    def _on_message(self, body: dict[str, Any], event: dict[str, Any], context: dict[str, Any]) -> None:
        """Direct messages are questions; channel messages only count when they mention the bot."""
        if event.get("channel_type") != "im" or event.get("subtype") or event.get("bot_id"):
            return
        self._question(body, event, context.get("bot_user_id") or "")

    def _question(self, body: dict[str, Any], event: dict[str, Any], bot_user_id: str) -> None:
        channel, ts = str(event.get("channel", "")), str(event.get("ts", ""))
        if not channel or not ts or event.get("bot_id") or not self.once.first(f"message:{channel}:{ts}"):
            return
        thread = str(event.get("thread_ts") or ts)
        team = str(body.get("team_id") or event.get("team") or "")
        msg = Incoming(ConversationKey(PLATFORM, channel, thread), str(event.get("user", "")),
                       question_text(str(event.get("text", "")), bot_user_id), team_id=team)
        self._react("reactions_add", channel, ts)
        try:
            self._answer(msg, channel, thread)
        finally:
            self._react("reactions_remove", channel, ts)

    def _answer(self, msg: Incoming, channel: str, thread: str, picked_by: str = "") -> None:
        """Ask the backend and post the decision in the thread; a crash still gets a refusal."""
        try:
            messages = render_decision(self.backend.ask(msg), picked_by=picked_by)
        except Exception:
            log.exception("answering %s failed", msg.key.as_str())
            messages = [failure_message(self.refusal_message, INTERNAL_ERROR)]
        self._post(channel, thread, messages)

    def _post(self, channel: str, thread: str, messages: Sequence[SlackMessage]) -> None:
        for m in messages:
            try:
                self.client.chat_postMessage(channel=channel, thread_ts=thread, text=m.text, blocks=m.blocks,
                                             unfurl_links=False, unfurl_media=False)
            except SlackApiError as exc:
                log.error("posting to %s failed: %s", channel, exc.response.get("error"))
                return

    def _react(self, method: str, channel: str, ts: str) -> None:
        """The eyes reaction says "working on it"; failing to add or remove it must not stop the answer."""
        try:
            getattr(self.client, method)(channel=channel, timestamp=ts, name=WORKING_REACTION)
        except SlackApiError as exc:
            log.debug("%s failed: %s", method, exc.response.get("error"))

    # -- buttons --------------------------------------------------------------------
    def _on_suggestion(self, ack: Callable[..., Any], body: dict[str, Any], action: dict[str, Any]) -> None:
        """A suggestion button asks that suggestion (by its stored id) in the refusal's thread."""
        ack()
        sid = _int(action.get("value"))
        channel = str((body.get("channel") or {}).get("id", ""))
        message = body.get("message") or {}
        container = body.get("container") or {}
        user = str((body.get("user") or {}).get("id", ""))
        thread = str(message.get("thread_ts") or container.get("thread_ts") or message.get("ts") or "")
        if sid is None or not channel or not thread:
            return
        if not self.once.first(f"pick:{channel}:{message.get('ts')}:{sid}:{user}"):
            return  # a double click
        team = str((body.get("team") or {}).get("id") or (body.get("user") or {}).get("team_id") or "")
        label = str((action.get("text") or {}).get("text", ""))
        msg = Incoming(ConversationKey(PLATFORM, channel, thread), user, label, team_id=team, suggestion_id=sid)
        self._answer(msg, channel, thread, picked_by=user)

    def _on_feedback(self, ack: Callable[..., Any], body: dict[str, Any], action: dict[str, Any]) -> None:
        """Thumbs up/down are stored with the turn; the voter gets a private thank-you."""
        ack()
        turn_id = _int(action.get("value"))
        user = str((body.get("user") or {}).get("id", ""))
        channel = str((body.get("channel") or {}).get("id", ""))
        message = body.get("message") or {}
        if turn_id is None or not user:
            return
        value = 1 if action.get("action_id") == FEEDBACK_UP else -1
        stored = self.backend.record_feedback(turn_id, user, value)
        text = "Thanks for the feedback." if stored else "That answer can no longer be rated."
        try:
            self.client.chat_postEphemeral(channel=channel, user=user, text=text,
                                           thread_ts=message.get("thread_ts") or message.get("ts"))
        except SlackApiError as exc:
            log.debug("feedback thank-you failed: %s", exc.response.get("error"))

    # -- admin slash commands -------------------------------------------------------------
    def _refuse_non_admin(self, ack: Callable[..., Any], command: dict[str, Any]) -> bool:
        """Ephemeral refusal for non-admins; True when the caller must stop (nothing has run)."""
        if self.backend.is_admin(PLATFORM, str(command.get("user_id", ""))):
            return False
        ack(text=f"Sorry, only groundbot admins can use {command.get('command')}. Nothing was run.")
        return True

    def _on_reingest(self, ack: Callable[..., Any], command: dict[str, Any], respond: Callable[..., Any]) -> None:
        if self._refuse_non_admin(ack, command):
            return
        raw = str(command.get("text") or "").strip()
        try:
            paths = shlex.split(raw) or None
        except ValueError:
            paths = raw.split() or None
        where = ", ".join(paths) if paths else "the configured knowledge base"
        ack(text=f"Re-ingesting {where}; progress follows in this channel.")
        user, channel = str(command.get("user_id")), str(command.get("channel_id"))
        report = _ProgressReport(self.client, channel, respond, self.progress_interval_s)
        report.start(f"<@{user}> started a re-ingest of {where}…")
        try:
            summary = self.backend.admin_reingest(PLATFORM, user, paths, report)
        except PathNotAllowed as exc:
            report.finish(f"Re-ingest refused: {exc}")
            return
        except PermissionError:
            report.finish("Re-ingest refused: you are not a groundbot admin.")
            return
        except Exception as exc:
            log.exception("re-ingest failed")
            report.finish(f"Re-ingest of {where} failed: {type(exc).__name__}: {exc}")
            return
        report.finish(f"Re-ingest of {where} done: {summary.line()}")

    def _on_stats(self, ack: Callable[..., Any], command: dict[str, Any], respond: Callable[..., Any]) -> None:
        self._admin_report(ack, command, respond, lambda user: stats_text(self.backend.admin_stats(PLATFORM, user)))

    def _on_review(self, ack: Callable[..., Any], command: dict[str, Any], respond: Callable[..., Any]) -> None:
        self._admin_report(ack, command, respond,
                           lambda user: review_text(self.backend.admin_review_queue(PLATFORM, user)))

    def _admin_report(self, ack: Callable[..., Any], command: dict[str, Any], respond: Callable[..., Any],
                      build: Callable[[str], str]) -> None:
        """Ack first (stats read the whole transcript table), then answer privately via response_url."""
        if self._refuse_non_admin(ack, command):
            return
        ack()
        try:
            text = build(str(command.get("user_id")))
        except PermissionError:
            text = f"Sorry, only groundbot admins can use {command.get('command')}."
        except Exception as exc:
            log.exception("%s failed", command.get("command"))
            text = f"{command.get('command')} failed: {type(exc).__name__}"
        respond(text=text, response_type="ephemeral")


class _ProgressReport:
    """One message in the channel, edited as the re-ingest advances (at most every `interval` s)."""

    def __init__(self, client: WebClient, channel: str, respond: Callable[..., Any], interval: float) -> None:
        self.client = client
        self.channel = channel
        self.respond = respond
        self.interval = interval
        self.ts = ""
        self._last = 0.0

    def start(self, text: str) -> None:
        try:
            self.ts = str(self.client.chat_postMessage(channel=self.channel, text=text)["ts"])
        except SlackApiError as exc:  # e.g. a private channel the bot is not in
            log.warning("cannot post re-ingest progress in %s: %s", self.channel, exc.response.get("error"))
        self._last = time.monotonic()

    def __call__(self, phase: str, done: int, total: int) -> None:
        now = time.monotonic()
        if not self.ts or now - self._last < self.interval:
            return
        self._last = now
        self._update(f"Re-ingesting… {phase}: {done}/{total}")

    def finish(self, text: str) -> None:
        if not self.ts or not self._update(text):
            self.respond(text=text, response_type="ephemeral")

    def _update(self, text: str) -> bool:
        try:
            self.client.chat_update(channel=self.channel, ts=self.ts, text=text)
            return True
        except SlackApiError as exc:
            log.warning("cannot update re-ingest progress: %s", exc.response.get("error"))
            return False


def events_endpoint(app: BoltApp) -> Callable[[Request], Awaitable[Response]]:
    """A Starlette endpoint for the Events API, slash commands and interactivity.

    bolt's own Starlette adapter converts the request and the response; bolt verifies the
    signature (401 otherwise), acks and dispatches. Dispatch runs on a worker thread because
    the middleware may touch a database and the listener hand-off must not stall the event loop.
    """

    async def endpoint(request: Request) -> Response:
        body = await request.body()
        if len(body) > MAX_HTTP_BODY:
            return PlainTextResponse("too large", status_code=413)
        response = await run_in_threadpool(app.dispatch, to_bolt_request(request, body))
        return to_starlette_response(response)

    return endpoint


class SlackHTTPServer:
    """The Events API endpoint on uvicorn (`groundbot slack --http`); put TLS in front.

    `groundbot serve` mounts the same endpoint next to its other routes; this class serves it
    alone, with `GET /healthz`. The port is bound at construction, so port 0 gives a free one.
    """

    def __init__(self, app: BoltApp, host: str, port: int, path: str) -> None:
        async def healthz(request: Request) -> Response:
            return PlainTextResponse("ok")

        asgi = Starlette(routes=[Route(path, events_endpoint(app), methods=["POST"]),
                                 Route("/healthz", healthz, methods=["GET"])])
        self.path = path
        self.socket = socket.create_server((host, port), reuse_port=False)
        self.server = uvicorn.Server(uvicorn.Config(asgi, log_level="warning", lifespan="off",
                                                    timeout_graceful_shutdown=30))
        self._done = threading.Event()

    @property
    def port(self) -> int:
        return int(self.socket.getsockname()[1])

    def serve_forever(self) -> None:
        try:
            self.server.run(sockets=[self.socket])
        finally:
            self._done.set()

    def shutdown(self, timeout: float = 60.0) -> None:
        """Stop taking requests, finish those in flight, close the socket."""
        self.server.should_exit = True
        if self.server.started or not self._done.is_set():
            self._done.wait(timeout if self.server.started else 0.5)
        self.socket.close()
