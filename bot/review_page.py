"""The review queue as a small web page of `groundbot serve` (GET/POST /review).

Admins sign in with the token from the environment variable `[serve] review_token_env`; the
page lists the open items as `show` renders them and offers the same actions as every chat
platform, through the same review desk (bot/review.py). Every text is HTML-escaped. The sign-in
sets an HttpOnly, SameSite=Strict cookie derived from the token, and every form carries a CSRF
token derived from it too; a POST without both changes nothing.
"""

from __future__ import annotations

import hashlib
import hmac
import html
from collections.abc import Callable
from typing import TYPE_CHECKING

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from core.replies import Action

if TYPE_CHECKING:
    from bot.app import App

COOKIE = "groundbot_review"
REVIEWER = "web:admin"
_STYLE = "body{font-family:sans-serif;max-width:60em;margin:2em auto}pre{white-space:pre-wrap;background:#f6f6f6;padding:.5em}"


def _derive(token: str, purpose: str) -> str:
    return hmac.new(token.encode(), purpose.encode(), hashlib.sha256).hexdigest()


def _page(body: str, status: int = 200) -> HTMLResponse:
    return HTMLResponse(f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>groundbot review</title>'
                        f"<style>{_STYLE}</style></head><body><h1>groundbot review queue</h1>{body}</body></html>",
                        status_code=status)


class ReviewPage:
    """Routes of the review page; `app` gives the App once the worker has built it."""

    def __init__(self, token: str, app: Callable[[], App | None], path: str = "/review") -> None:
        self.token = token
        self.app = app
        self.path = path.rstrip("/")

    def routes(self) -> list[Route]:
        return [Route(self.path, self.page, methods=["GET"]), Route(f"{self.path}/login", self.login, methods=["POST"]),
                Route(f"{self.path}/act", self.act, methods=["POST"])]

    def _signed_in(self, request: Request) -> bool:
        return hmac.compare_digest(request.cookies.get(COOKIE, ""), _derive(self.token, "session"))

    async def login(self, request: Request) -> Response:
        form = await _form(request)
        if not hmac.compare_digest(str(form.get("token", "")), self.token):
            return _page("<p>Wrong token.</p>" + self._login_form(), status=403)
        response = RedirectResponse(self.path, status_code=303)
        response.set_cookie(COOKIE, _derive(self.token, "session"), httponly=True, samesite="strict",
                            path=self.path)
        return response

    def _login_form(self) -> str:
        return (f'<form method="post" action="{self.path}/login"><label>Admin token '
                '<input type="password" name="token" autocomplete="off"></label> <button>Sign in</button></form>')

    async def page(self, request: Request) -> Response:
        if not self._signed_in(request):
            return _page(self._login_form(), status=401)
        app = self.app()
        if app is None:
            return _page("<p>groundbot is starting; try again in a moment.</p>", status=503)
        note = html.escape(request.query_params.get("done", ""))
        csrf = _derive(self.token, "csrf")
        items = []
        for entry in app.commands.desk.queue.entries(limit=50):
            shown = app.commands.desk.show(entry)
            buttons = "".join(f'<button name="action" value="{a}">{html.escape(a.title())}</button> '
                              for a in (Action.APPROVE, Action.EDIT, Action.REJECT, Action.FAQ))
            items.append(f"<section><h2>#{entry.id} ({html.escape(entry.origin)})</h2>"
                         f"<pre>{html.escape(shown.text)}</pre>"
                         f'<form method="post" action="{self.path}/act"><input type="hidden" name="csrf" value="{csrf}">'
                         f'<input type="hidden" name="item" value="{entry.id}">'
                         f'<textarea name="text" rows="3" cols="80">{html.escape(shown.prefill)}</textarea><br>'
                         f"{buttons}</form></section>")
        body = (f"<p>{note}</p>" if note else "") + ("".join(items) or "<p>The review queue is empty.</p>")
        return _page(body)

    async def act(self, request: Request) -> Response:
        form = await _form(request)
        if not self._signed_in(request) or not hmac.compare_digest(str(form.get("csrf", "")),
                                                                   _derive(self.token, "csrf")):
            return _page("<p>Not signed in, or the form is stale; nothing was changed.</p>", status=403)
        app = self.app()
        item, action, text = str(form.get("item", "")), str(form.get("action", "")), str(form.get("text", ""))
        entry = app.commands.desk.queue.entry(int(item)) if app and item.isdigit() else None
        if app is None or entry is None or action not in (Action.APPROVE, Action.EDIT, Action.REJECT, Action.FAQ):
            return _page("<p>Unknown item or action; nothing was changed.</p>", status=400)
        from starlette.concurrency import run_in_threadpool

        reply = await run_in_threadpool(app.commands.desk.decide, entry, Action(action), REVIEWER,
                                        text if action in (Action.EDIT, Action.FAQ) else "")
        return RedirectResponse(f"{self.path}?{_query(reply.text)}", status_code=303)


async def _form(request: Request) -> dict[str, str]:
    """An urlencoded form's fields (the page's forms send nothing else; no multipart parser needed)."""
    from urllib.parse import parse_qsl

    body = (await request.body())[:200_000].decode("utf-8", errors="replace")
    return dict(parse_qsl(body, keep_blank_values=True))


def _query(text: str) -> str:
    from urllib.parse import urlencode

    return urlencode({"done": text[:300]})
