"""A local stand-in for the Slack Web API and the Socket Mode websocket, on 127.0.0.1.

The real slack-sdk client talks to it over HTTP (`base_url`), and the real Socket Mode
client connects to its websocket after `apps.connections.open`. Every Web API request is
recorded with its parsed body so tests assert what the bot actually sent; a 429 with
Retry-After can be injected per method; tests push envelopes over the websocket and read
the acks the bot sends back. `message_event` is the `message` event Slack sends an app
subscribed to a channel's messages (`message.channels`) for a message the bot itself posted.

The agent surface answers as Slack documents it now: an app with `agent_view` (the manifest
groundbot ships) that names a `thread_ts` in `assistant.threads.setSuggestedPrompts` gets `ok`
and nothing is applied (Slack's "Migrating to the Agent messaging experience"); `suggested` holds
the prompts a conversation shows. `assistant.threads.setStatus` takes `chat:write` or
`assistant:write` (Slack's change of 2026-03-05), checked against `scopes` when they are set.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from websockets.sync.server import ServerConnection, serve

from tests.waits import WAIT_S

BOT_USER = "UBOT"
BOT_ID = "BBOT"
TEAM = "T0GROUND"


@dataclass
class Call:
    """One request the bot made: Web API method (or `respond` for response_url posts)."""

    method: str
    args: dict[str, Any]
    token: str
    at: float = field(default_factory=time.monotonic)
    status: int = 200
    result: dict[str, Any] = field(default_factory=dict)  # what the stand-in answered


class SlackStandIn:
    def __init__(self) -> None:
        self.calls: list[Call] = []
        self.acks: dict[str, dict[str, Any]] = {}
        self._failures: dict[str, list[tuple[int, int, str]]] = {}
        self._cond = threading.Condition()
        self._ts = itertools.count(1)
        self.messages: list[dict[str, Any]] = []  # what chat.postMessage posted, for conversations.replies
        self.user_groups: dict[str, list[str]] = {}  # user group id -> its members, for usergroups.users.list
        self.scopes: list[str] | None = None  # the bot token's scopes, sent as x-oauth-scopes when set
        self.agent_view = True  # the app's manifest has features.agent_view (else the older assistant view)
        self.suggested: dict[tuple[str, str], list[dict[str, str]]] = {}  # (channel, thread or "") -> prompts shown
        self._sockets: list[ServerConnection] = []
        standin = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                url = urlsplit(self.path)
                raw = self.rfile.read(int(self.headers.get("Content-Length", 0) or 0)).decode()
                args: dict[str, Any] = dict(parse_qsl(url.query))
                if raw:
                    if (self.headers.get("Content-Type") or "").startswith("application/json"):
                        args.update(json.loads(raw))
                    else:
                        args.update(dict(parse_qsl(raw, keep_blank_values=True)))
                for key in ("blocks", "attachments", "view", "metadata"):  # form-encoded calls send these as JSON strings
                    if isinstance(args.get(key), str):
                        args[key] = json.loads(args[key])
                auth = self.headers.get("Authorization", "")
                token = auth.removeprefix("Bearer ") if auth else str(args.pop("token", ""))
                method = "respond" if url.path.startswith("/respond/") else url.path.removeprefix("/api/")
                status, headers, payload = standin._answer(method, args, token)
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                for k, v in headers.items():
                    self.send_header(k, v)
                if standin.scopes is not None:  # Slack names the token's scopes on every Web API answer
                    self.send_header("x-oauth-scopes", ",".join(standin.scopes))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST  # conversations.replies and other reads send their arguments as a query

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.http.daemon_threads = True
        self.ws = serve(self._ws_session, "127.0.0.1", 0, compression=None, ping_interval=None)
        self._threads = [threading.Thread(target=self.http.serve_forever, daemon=True),
                         threading.Thread(target=self.ws.serve_forever, daemon=True)]

    # -- addresses ------------------------------------------------------------------
    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.http.server_address[1]}/api/"

    def response_url(self, name: str = "r") -> str:
        return f"http://127.0.0.1:{self.http.server_address[1]}/respond/{name}"

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.ws.socket.getsockname()[1]}/link/?ticket=standin"

    # -- Web API ----------------------------------------------------------------------
    def fail_next(self, method: str, *, status: int = 429, retry_after: int = 1, times: int = 1,
                  error: str = "") -> None:
        """The next `times` calls of `method` get `status` (429: with a Retry-After header), or
        with `error` Slack's 200 with `ok: false` and that error (e.g. "missing_scope")."""
        with self._cond:
            self._failures.setdefault(method, []).extend([(200 if error else status, retry_after, error)] * times)

    def _answer(self, method: str, args: dict[str, Any], token: str) -> tuple[int, dict[str, str], dict[str, Any]]:
        call = Call(method, args, token)
        with self._cond:
            failures = self._failures.get(method) or []
            if failures:
                status, retry_after, error = failures.pop(0)
                call.status = status
                headers = {"Retry-After": str(retry_after)} if status == 429 else {}
                call.result = {"ok": False, "error": error or ("ratelimited" if status == 429 else "fatal_error")}
            else:
                status, headers = 200, {}
                call.result = self._result(method, args, token, next(self._ts))
            self.calls.append(call)
            self._cond.notify_all()
        return status, headers, call.result

    def _result(self, method: str, args: dict[str, Any], token: str, n: int) -> dict[str, Any]:
        wants_app_token = method == "apps.connections.open"
        if method != "respond" and not token.startswith("xapp-" if wants_app_token else "xoxb-"):
            return {"ok": False, "error": "invalid_auth"}
        ts = f"1700000000.{n:06d}"
        payloads: dict[str, dict[str, Any]] = {
            "auth.test": {"url": "https://standin.slack.test/", "team": "Stand-in", "user": "groundbot",
                          "team_id": TEAM, "user_id": BOT_USER, "bot_id": BOT_ID, "is_enterprise_install": False},
            "apps.connections.open": {"url": self.ws_url},
            "chat.postMessage": {"channel": args.get("channel"), "ts": ts,
                                 "message": {"text": args.get("text"), "ts": ts, "thread_ts": args.get("thread_ts"),
                                             "bot_id": BOT_ID, "user": BOT_USER}},
            "chat.update": {"channel": args.get("channel"), "ts": args.get("ts"), "text": args.get("text")},
            "chat.postEphemeral": {"message_ts": ts},
            "views.open": {"view": {"id": f"V{n:06d}", **(args.get("view") or {})}},
            "reactions.add": {},
            "assistant.threads.setStatus": {},
            "assistant.threads.setSuggestedPrompts": {},
            "reactions.remove": {},
            "respond": {},
        }
        if method == "chat.postMessage":
            self.messages.append({**payloads[method]["message"], "channel": args.get("channel"),
                                  "metadata": args.get("metadata")})
        if method == "conversations.replies":
            return self._replies(args)
        refused = self._agent_call(method, args)
        if refused:
            return {"ok": False, "error": refused}
        if method == "usergroups.users.list":
            if str(args.get("usergroup")) not in self.user_groups:
                return {"ok": False, "error": "no_such_subteam"}
            return {"ok": True, "users": self.user_groups[str(args.get("usergroup"))]}
        if method not in payloads:
            return {"ok": False, "error": "unknown_method"}
        return {"ok": True, **payloads[method]}

    def _agent_call(self, method: str, args: dict[str, Any]) -> str:
        """The error Slack gives an agent method's call ("" for none), applying what it applies."""
        granted = set(self.scopes) if self.scopes is not None else None
        if method == "assistant.threads.setStatus" and granted is not None and not {"chat:write", "assistant:write"} & granted:
            return "missing_scope"
        if method != "assistant.threads.setSuggestedPrompts":
            return ""
        if granted is not None and "assistant:write" not in granted:
            return "missing_scope"
        thread = str(args.get("thread_ts") or "")
        if not thread and not self.agent_view:
            return "invalid_arguments"  # the assistant view's prompts belong to a thread
        if thread and self.agent_view:
            return ""  # ok, and silently not applied: an agent-view conversation has no such thread
        self.suggested[(str(args.get("channel_id")), thread)] = list(args.get("prompts") or [])
        return ""

    def _replies(self, args: dict[str, Any]) -> dict[str, Any]:
        """A thread's bot messages, oldest first, with their metadata only when asked for it;
        `missing_scope` is injected with fail_next(error=...) like any error."""
        thread = [dict(m) for m in self.messages if m["channel"] == args.get("channel")
                  and args.get("ts") in (m["ts"], m["thread_ts"])]
        if str(args.get("include_all_metadata")).lower() not in ("1", "true"):
            for m in thread:
                m.pop("metadata", None)
        return {"ok": True, "messages": thread, "has_more": False}

    def add_message(self, channel: str, ts: str, user: str, text: str, thread_ts: str = "", **fields: Any) -> None:
        """A person's message as the channel holds it (what conversations.replies reads back),
        `fields` added (subtype "tombstone" for a deleted thread root)."""
        with self._cond:
            self.messages.append({"type": "message", "channel": channel, "ts": ts, "user": user, "text": text,
                                  "thread_ts": thread_ts or None, "metadata": None, **fields})

    def message_event(self, posted: Call) -> dict[str, Any]:
        """The `message` event Slack delivers for a message the bot posted (chat.postMessage),
        as subscribers of the channel's messages get it: from the bot, in its thread."""
        msg = posted.result["message"]
        channel = str(posted.args["channel"])
        kind = {"C": "channel", "G": "group", "D": "im"}.get(channel[:1], "channel")
        return {"type": "message", "channel": channel, "channel_type": kind, "user": BOT_USER, "bot_id": BOT_ID,
                "app_id": "A0GROUND", "text": msg["text"], "ts": msg["ts"], "event_ts": msg["ts"], "team": TEAM,
                "bot_profile": {"id": BOT_ID, "name": "groundbot", "team_id": TEAM},
                **({"thread_ts": msg["thread_ts"]} if msg.get("thread_ts") else {})}

    def requests(self, method: str) -> list[Call]:
        with self._cond:
            return [c for c in self.calls if c.method == method]

    def wait_until(self, check: Callable[[], Any], timeout: float = WAIT_S, what: str = "") -> Any:
        """Block until `check()` returns something truthy (re-run after every recorded request) and
        return it; `timeout` is only the bound after which it counts as never happening."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                result = check()
                if result:
                    return result
                left = deadline - time.monotonic()
                if left <= 0:
                    seen = [c.method for c in self.calls]
                    raise AssertionError(f"timed out waiting for {what or check}; calls: {seen}")
                self._cond.wait(left)

    def wait_for(self, method: str, count: int = 1, timeout: float = WAIT_S) -> list[Call]:
        """Block until `method` was called at least `count` times; return those calls."""
        found = self.wait_until(lambda: len(calls := [c for c in self.calls if c.method == method]) >= count and calls,
                                timeout, f"{count} call(s) of {method}")
        return list(found)

    # -- Socket Mode ------------------------------------------------------------------
    def _ws_session(self, conn: ServerConnection) -> None:
        with self._cond:
            self._sockets.append(conn)
            self._cond.notify_all()
        conn.send(json.dumps({"type": "hello", "num_connections": 1,
                              "debug_info": {"host": "standin"}, "connection_info": {"app_id": "A0GROUND"}}))
        try:
            for raw in conn:
                data = json.loads(raw)
                with self._cond:
                    self.acks[str(data.get("envelope_id"))] = data
                    self._cond.notify_all()
        except Exception:
            pass
        finally:
            with self._cond:
                if conn in self._sockets:
                    self._sockets.remove(conn)

    def send_envelope(self, kind: str, payload: dict[str, Any], *, retry_attempt: int = 0,
                      timeout: float = WAIT_S) -> str:
        """Push one Socket Mode envelope to the connected client; returns its envelope id."""
        envelope_id = f"env-{next(self._ts)}"
        deadline = time.monotonic() + timeout
        with self._cond:
            while not self._sockets:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError("no Socket Mode client connected")
                self._cond.wait(left)
            conn = self._sockets[-1]
        conn.send(json.dumps({"envelope_id": envelope_id, "type": kind, "payload": payload,
                              "accepts_response_payload": kind != "events_api",
                              "retry_attempt": retry_attempt, "retry_reason": "timeout" if retry_attempt else ""}))
        return envelope_id

    def wait_ack(self, envelope_id: str, timeout: float = WAIT_S) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        with self._cond:
            while envelope_id not in self.acks:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"envelope {envelope_id} was not acknowledged")
                self._cond.wait(left)
            return self.acks[envelope_id]

    def drop_sockets(self) -> None:
        """Close the websocket from the server side (as Slack does before a refresh)."""
        with self._cond:
            conns = list(self._sockets)
        for conn in conns:
            conn.close()

    # -- lifecycle --------------------------------------------------------------------
    def __enter__(self) -> SlackStandIn:
        for t in self._threads:
            t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.ws.shutdown()
        self.http.shutdown()
        self.http.server_close()
