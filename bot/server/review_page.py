"""The review queue as a small web page of `groundbot serve` (GET/POST /review).

Admins sign in with the token from the environment variable `[serve] review_token_env` (every
scope's items) or a `[[scopes]]` entry's `review_token_env` (that scope's items only, as a
scope's own admins see them in chat); the page lists the open items as `show` renders them and
offers the same actions as every chat platform, through the same review desk
(bot/services/review.py). The page is a Jinja2 template with autoescaping on. Signing in sets a
session cookie naming the sign-in's scope, signed with that sign-in's token (itsdangerous), good
for `[serve] review_session_hours`: HttpOnly, SameSite=Strict, and Secure when the page is
served over HTTPS. Every form carries a CSRF token derived from the session; a POST without
both changes nothing. Refused sign-ins, stale sessions and another scope's items are recorded
(bot/server/scope_access.py).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from itsdangerous import BadSignature, TimestampSigner
from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from bot.server.scope_access import NOBODY, Refusals, Refused, matching
from core.admin_replies import Action

if TYPE_CHECKING:
    from bot.app import App
    from bot.server.attempts import Attempts

COOKIE = "groundbot_review"
REVIEWER = "web:admin"
EVERY_SCOPE = "*"  # the sign-in of `[serve] review_token_env`
ACTIONS = (Action.APPROVE, Action.EDIT, Action.REJECT, Action.FAQ)
_TEMPLATES = Environment(loader=PackageLoader("bot.server", "templates"), autoescape=select_autoescape(["html"]))


def _page(status: int = 200, **context: Any) -> HTMLResponse:
    return HTMLResponse(_TEMPLATES.get_template("review.html").render(**context), status_code=status)


class ReviewPage:
    """Routes of the review page; `tokens` maps each sign-in ("*" or a scope's name) to its token;
    `app` gives the App once the worker has built it."""

    def __init__(self, tokens: dict[str, str], app: Callable[[], App | None], refusals: Refusals,
                 path: str = "/review", session_hours: float = 8.0, attempts: Attempts | None = None) -> None:
        """`attempts`: the limit on wrong sign-in tokens (bot/server/attempts.py); None: no limit."""
        self.tokens = tokens
        self.app = app
        self.refusals = refusals
        self.attempts = attempts
        self.path = path.rstrip("/")
        self.max_age = max(1, int(session_hours * 3600))

    def routes(self) -> list[Route]:
        return [Route(self.path, self.page, methods=["GET"]), Route(f"{self.path}/login", self.login, methods=["POST"]),
                Route(f"{self.path}/act", self.act, methods=["POST"])]

    def _signer(self, who: str) -> TimestampSigner:
        return TimestampSigner(self.tokens[who], salt="groundbot-review-session")

    def _session(self, request: Request) -> tuple[str, str] | None:
        """(sign-in, session id) of the cookie, or None when it is missing, forged or expired. The
        cookie names its sign-in and is signed with that sign-in's token: one scope's token cannot
        sign another's, and rotating a token ends its sessions alone."""
        cookie = request.cookies.get(COOKIE, "")
        who = cookie.split(":", 1)[0]
        if who not in self.tokens:
            return None
        try:
            value = self._signer(who).unsign(cookie, max_age=self.max_age).decode()
        except BadSignature:  # SignatureExpired is one too
            return None
        return who, value.split(":", 1)[1]

    def _csrf(self, who: str, session: str) -> str:
        return hmac.new(self.tokens[who].encode(), f"csrf:{who}:{session}".encode(), hashlib.sha256).hexdigest()

    async def _refuse(self, refused: Refused, **page: Any) -> Response:
        from starlette.concurrency import run_in_threadpool

        await run_in_threadpool(self.refusals.record, "review", refused)
        response = _page(refused.status, message=refused.message, **page)
        response.headers.update(refused.headers(bearer=False))
        return response

    async def login(self, request: Request) -> Response:
        if self.attempts is not None and (locked := await self.attempts.check("review", request)) is not None:
            return await self._refuse(replace(locked, message="Too many wrong tokens; try again later."),
                                      login=True, path=self.path)
        form = await _form(request)
        given = str(form.get("token", ""))
        who = matching(given, self.tokens)
        if who is None:
            if self.attempts is not None and given:
                await self.attempts.count("review", request)
            return await self._refuse(Refused(403, "wrong_token", "Wrong token."), login=True, path=self.path)
        response = RedirectResponse(self.path, status_code=303)
        cookie = self._signer(who).sign(f"{who}:{secrets.token_urlsafe(16)}").decode()
        response.set_cookie(COOKIE, cookie, max_age=self.max_age, httponly=True, samesite="strict",
                            secure=request.url.scheme == "https", path=self.path)
        return response

    async def page(self, request: Request) -> Response:
        signed = self._session(request)
        if signed is None:
            if request.cookies.get(COOKIE):  # a cookie, but expired, forged or of a token no longer set
                return await self._refuse(Refused(401, "bad_session", "Please sign in again."), login=True,
                                          path=self.path)
            return _page(401, login=True, path=self.path)
        who, session = signed
        app = self.app()
        if app is None:
            return _page(503, message="groundbot is starting; try again in a moment.")
        items = []
        for entry in app.desk.queue.entries(limit=50, scopes=_own(who)):
            shown = app.desk.cards.show(entry)
            items.append({"id": entry.id, "origin": entry.origin, "text": shown.text, "prefill": shown.prefill})
        return _page(note=request.query_params.get("done", ""), items=items, empty=not items, path=self.path,
                     csrf=self._csrf(who, session), actions=ACTIONS, scope="" if who == EVERY_SCOPE else who)

    async def act(self, request: Request) -> Response:
        form = await _form(request)
        signed = self._session(request)
        if signed is None or not hmac.compare_digest(str(form.get("csrf", "")), self._csrf(*signed)):
            who = _holder(signed[0]) if signed else NOBODY
            return await self._refuse(Refused(403, "bad_session", "Not signed in, or the form is stale; "
                                                                  "nothing was changed.", who))
        app, who = self.app(), signed[0]
        if app is None:
            return _page(503, message="groundbot is starting; nothing was changed; try again in a moment.")
        item, action, text = str(form.get("item", "")), str(form.get("action", "")), str(form.get("text", ""))
        entry = app.desk.queue.entry(int(item)) if item.isascii() and item.isdigit() and len(item) < 19 else None
        if who != EVERY_SCOPE and (entry is None or not app.desk.may_review(entry, _own(who))):
            # another scope's item and no item at all read alike: the page tells nothing of the others
            scope = str(entry.record.get("scope") or "") if entry is not None else ""
            return await self._refuse(Refused(403, "item_not_in_scope", "No such item in the queue of your "
                                                                        "scope; nothing was changed.", _holder(who), scope))
        if entry is None or action not in ACTIONS:
            return _page(400, message="Unknown item or action; nothing was changed.")
        from starlette.concurrency import run_in_threadpool

        reviewer = REVIEWER if who == EVERY_SCOPE else f"{REVIEWER}:{who}"
        reply = await run_in_threadpool(app.desk.decide, entry, Action(action), reviewer,
                                        text if action in (Action.EDIT, Action.FAQ) else "")
        return RedirectResponse(f"{self.path}?{_query(reply.text)}", status_code=303)


def _own(who: str) -> list[str] | None:
    """The scopes a sign-in reviews: None for every scope."""
    return None if who == EVERY_SCOPE else [who]


def _holder(who: str) -> str:
    """A sign-in as access refusals name it (bot/server/scope_access.py)."""
    return "global" if who == EVERY_SCOPE else f"scope:{who}"


async def _form(request: Request) -> dict[str, str]:
    """An urlencoded form's fields (the page's forms send nothing else; no multipart parser needed)."""
    from urllib.parse import parse_qsl

    body = (await request.body())[:200_000].decode("utf-8", errors="replace")
    return dict(parse_qsl(body, keep_blank_values=True))


def _query(text: str) -> str:
    from urllib.parse import urlencode

    return urlencode({"done": text[:300]})
