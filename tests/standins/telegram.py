"""A local stand-in for the Telegram Bot API on 127.0.0.1, for scenario tests.

It records every request (method, decoded parameters, headers), serves `enqueue()`d
updates to long-polling `getUpdates`, answers the send/edit methods the way Telegram
does (with message ids), and can answer the next call of a method with a 429.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.waits import WAIT_S

# parameters PTB sends JSON-encoded in its form bodies; everything else stays a string
_JSON_PARAMS = {"chat_id", "message_id", "reply_markup", "reply_parameters", "link_preview_options", "offset",
                "limit", "timeout", "allowed_updates", "message_thread_id", "drop_pending_updates",
                "max_connections", "show_alert", "entities"}


@dataclass
class Call:
    """One request the bot made."""

    method: str
    params: dict[str, Any]
    headers: dict[str, str]
    at: float
    status: int = 200
    result: Any = None  # what the stand-in answered (e.g. the sent Message)


@dataclass
class _Failure:
    method: str
    retry_after: int
    times: int


@dataclass
class TelegramStandIn:
    token: str = "123456:TEST-TOKEN"
    bot_id: int = 4242
    username: str = "groundbot_test_bot"
    calls: list[Call] = field(default_factory=list)
    drafts_missing: bool = False  # answer sendMessageDraft 404, as a Bot API server older than 9.3 does

    def __post_init__(self) -> None:
        self._updates: list[dict[str, Any]] = []
        self._update_ids = itertools.count(1)
        self._message_ids = itertools.count(1000)
        self._chats: dict[int, dict[str, Any]] = {}
        self._failures: list[_Failure] = []
        self._changed = asyncio.Event()  # any request finished
        self._new_update = asyncio.Event()  # an update was queued
        self._stopping = False
        self._runner: web.AppRunner | None = None
        self.port = 0

    # -- lifecycle -------------------------------------------------------------
    async def start(self) -> TelegramStandIn:
        app = web.Application()
        app.router.add_route("*", "/bot{token}/{method}", self._handle)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        server = site._server
        assert server is not None and server.sockets  # type: ignore[attr-defined]
        self.port = server.sockets[0].getsockname()[1]  # type: ignore[attr-defined]
        return self

    async def stop(self) -> None:
        self._stopping = True
        self._new_update.set()
        if self._runner is not None:
            await self._runner.cleanup()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/bot"

    # -- what tests drive ------------------------------------------------------
    def fail_next(self, method: str, retry_after: int = 1, times: int = 1) -> None:
        """Answer the next `times` calls of `method` with 429 Too Many Requests."""
        self._failures.append(_Failure(method, retry_after, times))

    def enqueue(self, update: dict[str, Any]) -> dict[str, Any]:
        """Queue an update for getUpdates; returns it with its update_id."""
        update = {"update_id": next(self._update_ids), **update}
        self._updates.append(update)
        self._new_update.set()
        return update

    def message_update(self, text: str, *, chat_id: int = 501, user_id: int = 777, chat_type: str = "private",
                       reply_to: dict[str, Any] | None = None, entities: list[dict[str, Any]] | None = None,
                       message_id: int | None = None) -> dict[str, Any]:
        """A `message` update as Telegram would send it (not queued)."""
        msg: dict[str, Any] = {
            "message_id": message_id or next(self._message_ids),
            "date": int(time.time()),
            "chat": self.chat(chat_id, chat_type),
            "from": self.user(user_id),
            "text": text,
        }
        if text.startswith("/"):
            cmd = text.split()[0]
            msg["entities"] = [{"type": "bot_command", "offset": 0, "length": len(cmd)}]
        if entities:
            msg["entities"] = msg.get("entities", []) + entities
        if reply_to is not None:
            msg["reply_to_message"] = reply_to
        return {"message": msg}

    def send_text(self, text: str, **kwargs: Any) -> dict[str, Any]:
        """Queue a user message; returns the queued update."""
        return self.enqueue(self.message_update(text, **kwargs))

    def press(self, message: dict[str, Any], data: str, *, user_id: int = 777) -> dict[str, Any]:
        """Queue a callback query: `user_id` pressed the button with `data` under the bot's `message`."""
        return self.enqueue({"callback_query": {"id": f"cq{next(self._update_ids)}", "from": self.user(user_id),
                                                "chat_instance": "ci-1", "message": message, "data": data}})

    def chat(self, chat_id: int, chat_type: str = "private") -> dict[str, Any]:
        chat = {"id": chat_id, "type": chat_type}
        chat.update({"first_name": "Tester"} if chat_type == "private" else {"title": "Test group"})
        self._chats[chat_id] = chat
        return chat

    def user(self, user_id: int) -> dict[str, Any]:
        return {"id": user_id, "is_bot": False, "first_name": f"User{user_id}"}

    def bot_user(self) -> dict[str, Any]:
        return {"id": self.bot_id, "is_bot": True, "first_name": "groundbot", "username": self.username}

    # -- what tests read -------------------------------------------------------
    def of(self, method: str, *, ok_only: bool = True) -> list[Call]:
        return [c for c in self.calls if c.method == method and (c.status == 200 or not ok_only)]

    def sent(self, chat_id: int | None = None) -> list[Call]:
        """Successful sendMessage calls, optionally to one chat."""
        return [c for c in self.of("sendMessage") if chat_id is None or c.params["chat_id"] == chat_id]

    async def wait_for(self, check: Callable[[], Any], timeout: float = WAIT_S) -> Any:
        """Wait until `check()` returns something truthy (it is re-run after every request);
        `timeout` is only the bound after which the awaited request counts as never coming."""
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            self._changed.clear()
            result = check()
            if result:
                return result
            remaining = deadline - asyncio.get_running_loop().time()
            if remaining <= 0:
                raise AssertionError(f"timed out; calls so far: {[c.method for c in self.calls]}")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), remaining)

    async def wait_sent(self, count: int, chat_id: int | None = None, timeout: float = WAIT_S) -> list[Call]:
        """Wait until at least `count` messages were sent (to `chat_id`); returns them all."""
        return list(await self.wait_for(lambda: (s := self.sent(chat_id)) and len(s) >= count and s, timeout))

    # -- the fake API ----------------------------------------------------------
    async def _handle(self, request: web.Request) -> web.Response:
        if request.match_info["token"] != self.token:
            return web.json_response({"ok": False, "error_code": 401, "description": "Unauthorized"}, status=401)
        method = request.match_info["method"]
        params = await self._params(request)
        call = Call(method, params, dict(request.headers), time.monotonic())
        self.calls.append(call)
        try:
            failure = next((f for f in self._failures if f.method == method and f.times > 0), None)
            if failure is not None:
                failure.times -= 1
                call.status = 429
                return web.json_response({"ok": False, "error_code": 429,
                                          "description": f"Too Many Requests: retry after {failure.retry_after}",
                                          "parameters": {"retry_after": failure.retry_after}}, status=429)
            handler = None if method == "sendMessageDraft" and self.drafts_missing else getattr(self, f"_api_{method}", None)
            if handler is None:
                call.status = 404
                return web.json_response({"ok": False, "error_code": 404, "description": "Not Found"}, status=404)
            call.result = await handler(params)
            return web.json_response({"ok": True, "result": call.result})
        finally:
            self._changed.set()

    async def _params(self, request: web.Request) -> dict[str, Any]:
        if request.content_type == "application/json":
            return dict(await request.json())
        raw = dict(await request.post()) if request.body_exists else dict(request.query)
        out: dict[str, Any] = {}
        for key, value in raw.items():
            value = str(value)
            out[key] = json.loads(value) if key in _JSON_PARAMS else value
        return out

    async def _api_getMe(self, params: dict[str, Any]) -> Any:
        return {**self.bot_user(), "can_join_groups": True, "can_read_all_group_messages": False,
                "supports_inline_queries": False}

    async def _api_getUpdates(self, params: dict[str, Any]) -> Any:
        offset = int(params.get("offset") or 0)
        self._updates = [u for u in self._updates if u["update_id"] >= offset]
        timeout = float(params.get("timeout") or 0)
        deadline = asyncio.get_running_loop().time() + timeout
        while not self._updates and not self._stopping:
            remaining = deadline - asyncio.get_running_loop().time()
            if remaining <= 0:
                break
            self._new_update.clear()
            try:
                await asyncio.wait_for(self._new_update.wait(), remaining)
            except TimeoutError:
                break
        return list(self._updates)

    async def _api_sendMessage(self, params: dict[str, Any]) -> Any:
        return self._message(params)

    async def _api_editMessageText(self, params: dict[str, Any]) -> Any:
        return self._message(params, message_id=int(params["message_id"]))

    async def _api_sendChatAction(self, params: dict[str, Any]) -> Any:
        return True

    async def _api_sendMessageDraft(self, params: dict[str, Any]) -> Any:
        return True

    async def _api_answerCallbackQuery(self, params: dict[str, Any]) -> Any:
        return True

    async def _api_setWebhook(self, params: dict[str, Any]) -> Any:
        return True

    async def _api_deleteWebhook(self, params: dict[str, Any]) -> Any:
        return True

    def _message(self, params: dict[str, Any], message_id: int | None = None) -> dict[str, Any]:
        chat_id = int(params["chat_id"])
        msg: dict[str, Any] = {
            "message_id": message_id or next(self._message_ids),
            "date": int(time.time()),
            "chat": self._chats.get(chat_id, {"id": chat_id, "type": "private", "first_name": "Tester"}),
            "from": self.bot_user(),
            "text": params.get("text", ""),
        }
        if (params.get("reply_markup") or {}).get("inline_keyboard"):  # a sent message shows inline keyboards only
            msg["reply_markup"] = params["reply_markup"]
        return msg
