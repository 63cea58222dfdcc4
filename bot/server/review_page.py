"""The review queue as a small web page of `groundbot serve` (GET/POST /review).

Admins sign in with the token from the environment variable `[serve] review_token_env`; the
page lists the open items as `show` renders them and offers the same actions as every chat
platform, through the same review desk (bot/services/review.py). The page is a Jinja2 template
with autoescaping on. Signing in sets a session cookie signed with the token (itsdangerous), good
for `[serve] review_session_hours`: HttpOnly, SameSite=Strict, and Secure when the page is
served over HTTPS. Every form carries a CSRF token derived from the session; a POST without
both changes nothing.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from itsdangerous import BadSignature, TimestampSigner
from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from core.replies import Action

if TYPE_CHECKING:
    from bot.app import App

COOKIE = "groundbot_review"
REVIEWER = "web:admin"
ACTIONS = (Action.APPROVE, Action.EDIT, Action.REJECT, Action.FAQ)
_TEMPLATES = Environment(loader=PackageLoader("bot.server", "templates"), autoescape=select_autoescape(["html"]))


def _page(status: int = 200, **context: Any) -> HTMLResponse:
    return HTMLResponse(_TEMPLATES.get_template("review.html").render(**context), status_code=status)


class ReviewPage:
    """Routes of the review page; `app` gives the App once the worker has built it."""

    def __init__(self, token: str, app: Callable[[], App | None], path: str = "/review",
                 session_hours: float = 8.0) -> None:
        self.token = token
        self.app = app
        self.path = path.rstrip("/")
        self.max_age = max(1, int(session_hours * 3600))
        self.signer = TimestampSigner(token, salt="groundbot-review-session")

    def routes(self) -> list[Route]:
        return [Route(self.path, self.page, methods=["GET"]), Route(f"{self.path}/login", self.login, methods=["POST"]),
                Route(f"{self.path}/act", self.act, methods=["POST"])]

    def _session(self, request: Request) -> str:
        """The signed-in session's id, or "" when the cookie is missing, forged or expired."""
        try:
            return self.signer.unsign(request.cookies.get(COOKIE, ""), max_age=self.max_age).decode()
        except BadSignature:  # SignatureExpired is one too
            return ""

    def _csrf(self, session: str) -> str:
        return hmac.new(self.token.encode(), f"csrf:{session}".encode(), hashlib.sha256).hexdigest()

    async def login(self, request: Request) -> Response:
        form = await _form(request)
        if not hmac.compare_digest(str(form.get("token", "")), self.token):
            return _page(403, message="Wrong token.", login=True, path=self.path)
        response = RedirectResponse(self.path, status_code=303)
        response.set_cookie(COOKIE, self.signer.sign(secrets.token_urlsafe(16)).decode(), max_age=self.max_age,
                            httponly=True, samesite="strict", secure=request.url.scheme == "https", path=self.path)
        return response

    async def page(self, request: Request) -> Response:
        session = self._session(request)
        if not session:
            return _page(401, login=True, path=self.path)
        app = self.app()
        if app is None:
            return _page(503, message="groundbot is starting; try again in a moment.")
        items = []
        for entry in app.desk.queue.entries(limit=50):
            shown = app.desk.show(entry)
            items.append({"id": entry.id, "origin": entry.origin, "text": shown.text, "prefill": shown.prefill})
        return _page(note=request.query_params.get("done", ""), items=items, empty=not items, path=self.path,
                     csrf=self._csrf(session), actions=ACTIONS)

    async def act(self, request: Request) -> Response:
        form = await _form(request)
        session = self._session(request)
        if not session or not hmac.compare_digest(str(form.get("csrf", "")), self._csrf(session)):
            return _page(403, message="Not signed in, or the form is stale; nothing was changed.")
        app = self.app()
        item, action, text = str(form.get("item", "")), str(form.get("action", "")), str(form.get("text", ""))
        entry = app.desk.queue.entry(int(item)) if app and item.isdigit() else None
        if app is None or entry is None or action not in ACTIONS:
            return _page(400, message="Unknown item or action; nothing was changed.")
        from starlette.concurrency import run_in_threadpool

        reply = await run_in_threadpool(app.desk.decide, entry, Action(action), REVIEWER,
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
