"""`groundbot serve`: one ASGI application (Starlette on uvicorn) for everything that arrives over
HTTP, run as N identical worker processes sharing one database.

Routes: `GET /healthz` (the process is alive), `GET /readyz` (503 until the database answers,
the index is open and the model is loaded), `GET /metrics` (Prometheus; its own bearer token, or
loopback only once the API has a token), `POST /api/ask` (the `ask --json` decision for a web
widget or another service; a bearer token per knowledge scope, bot/server/scope_access.py), `POST /mcp`
(the MCP tools `ask` and `search` behind the same tokens, bot/server/mcp_route.py), the Slack
Events API endpoint (slack-bolt's own Starlette adapter, signatures checked by bolt) and the
Telegram webhook (Telegram's secret token checked). Wrong credentials at any of them are limited
per client and per route (bot/server/attempts.py); docs/deploy.md has the table of who may call
what. bot/server/run.py runs this app under uvicorn. The App and the front ends hung on it
(bot/server/worker.py) are built in the background so /healthz answers at once; each worker builds
its own. Several workers share one port, and there a worker takes connections only once built,
leaving them to its ready siblings. A Slack event or a Telegram update is acknowledged only once it is claimed in the
database with its payload, and marked done once answered; a worker that dies in between leaves its claims to the others
(bot/server/deliveries.py). On SIGTERM uvicorn stops accepting, waits for requests in flight, and the
shutdown hook lets Slack and Telegram work already acknowledged finish before the process exits.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import logging
import os
from collections.abc import AsyncIterator, Callable
from concurrent.futures import Future
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route
from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

from bot.app import App
from bot.config import Config
from bot.server.api_ask import incoming, parse_ask
from bot.server.attempts import Attempts
from bot.server.deliveries import Inbox
from bot.server.mcp_route import McpRoute
from bot.server.metrics import Metrics
from bot.server.scope_access import ApiAccess, Caller, MetricsAccess, Refusals, Refused, review_tokens
from bot.server.worker import Worker, build_worker
from core.render import decision_json

if TYPE_CHECKING:
    from adapters.slack import SlackAdapter

log = logging.getLogger("groundbot.serve")

TELEGRAM_SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"


class Service:
    """One worker's front: its Worker once built (bot/server/worker.py; in a thread, off the event
    loop, so /healthz answers at once), or why it could not be built or started."""

    def __init__(self, config: Config, app_factory: Callable[[], App], metrics: Metrics) -> None:
        self.config = config
        self.app_factory = app_factory
        self.metrics = metrics
        self.error = ""  # why the worker could not be built, or its platforms not started
        self._worker: Future[Worker] = Future()  # resolved once, by `build`

    @property
    def worker(self) -> Worker | None:
        """The built worker; None while it is being built, or when that failed."""
        done = self._worker.done() and self._worker.exception() is None
        return self._worker.result() if done else None

    @property
    def ready(self) -> bool:
        return self.worker is not None

    @property
    def app(self) -> App | None:
        return self.worker.app if self.worker else None

    @property
    def slack(self) -> SlackAdapter | None:
        worker = self.worker
        return worker.slack.adapter if worker and worker.slack else None

    def build(self) -> None:
        """Load the model, open the index and the database, wire the front ends (in a thread)."""
        try:
            worker = build_worker(self.config, self.app_factory(), self.metrics)
        except Exception as exc:
            self.error = f"{type(exc).__name__}: {exc}"
            log.exception("groundbot serve could not start")
            self._worker.set_exception(exc)
            return
        self._worker.set_result(worker)
        self.metrics.ready.set(1)

    async def start_platforms(self) -> None:
        """Start the delivery sweeper, Telegram's update processing (and register the webhook
        when a URL is configured)."""
        worker = self.worker
        if worker is None:
            return
        worker.inbox.start()
        if worker.telegram is None:
            return
        bot = worker.telegram.bot
        await bot.application.initialize()
        await bot.delivery.bind()  # admins' cards and reviewed answers can leave before any update arrives
        await bot.application.start()
        url = self.config.telegram.webhook_url
        if url:
            from adapters.telegram import ALLOWED_UPDATES

            await bot.bot.set_webhook(url, secret_token=worker.telegram.secret, allowed_updates=ALLOWED_UPDATES)

    async def stop(self) -> None:
        """Finish work already acknowledged: Telegram updates and Slack answers in progress."""
        worker = self.worker
        if worker is None:
            return
        await worker.inbox.stop()
        await run_in_threadpool(worker.schedule.stop)
        if worker.telegram is not None and worker.telegram.bot.application.running:
            await worker.telegram.bot.stop()
        if worker.slack is not None:
            await run_in_threadpool(worker.slack.adapter.close)
        worker.state.stop_heartbeat()
        await run_in_threadpool(worker.app.close)


def _unavailable(service: Service) -> JSONResponse:
    return JSONResponse({"ready": False, "error": service.error or "starting"}, status_code=503,
                        headers={"Retry-After": "5"})


def build_asgi(config: Config, *, app_factory: Callable[[], App] | None = None,
               metrics_dir: Path | None = None, accept_when_ready: bool = False) -> Starlette:
    """The ASGI application of one worker. `app_factory` builds the App (default: ready_app).
    `accept_when_ready`: take no connection before the App is built (uvicorn starts accepting
    after the lifespan's startup), for workers sharing a port; a lone worker answers /readyz
    with 503 while it loads instead. AccessConfigError when the tokens would leave scopes open."""
    from bot.app import ready_app

    access, tokens = ApiAccess.of(config), review_tokens(config)
    metrics = Metrics(metrics_dir)
    service = Service(config, app_factory or (lambda: ready_app(config)), metrics)
    refusals = Refusals(metrics, lambda: service.worker.access_log if service.worker else None)
    attempts = Attempts(config.serve, lambda: service.worker.state.rates if service.worker else None)
    ep = _Endpoints(config, service, metrics, access, refusals, accept_when_ready=accept_when_ready,
                    attempts=attempts, metrics_access=MetricsAccess.of(config, access, tokens))
    routes = [
        Route("/healthz", ep.healthz, methods=["GET"]),
        Route("/readyz", ep.readyz, methods=["GET"]),
        Route("/metrics", ep.metrics, methods=["GET"]),
        Route("/api/ask", ep.api_ask, methods=["POST"]),
        Route("/mcp", ep.mcp, methods=["POST"]),  # no server-to-client stream: GET and DELETE get 405
        Route(config.serve.slack_path, ep.slack_events, methods=["POST"]),
        Route(config.serve.telegram_path, ep.telegram_webhook, methods=["POST"]),
    ]
    if tokens:  # the review queue's web page, for admins holding a token (of every scope, or of one)
        from bot.server.review_page import ReviewPage

        routes += ReviewPage(tokens, lambda: service.app, refusals, session_hours=config.serve.review_session_hours,
                             attempts=attempts).routes()
    # the client of a request is its peer, or what a trusted proxy's X-Forwarded-For names (uvicorn's own
    # middleware; `serve` turns off uvicorn's default, which trusts any local peer's header)
    proxies = [Middleware(ProxyHeadersMiddleware, trusted_hosts=list(config.serve.trusted_proxies))]
    asgi = Starlette(routes=routes, lifespan=ep.lifespan, middleware=proxies if config.serve.trusted_proxies else [])
    asgi.state.service = service
    return asgi


class _Endpoints:
    """The routes of one worker, and its lifespan: build the App off the event loop, then
    start Telegram's update processing; on shutdown finish the work already acknowledged."""

    def __init__(self, config: Config, service: Service, metrics: Metrics, access: ApiAccess, refusals: Refusals, *,
                 accept_when_ready: bool = False, attempts: Attempts, metrics_access: MetricsAccess) -> None:
        self.config = config
        self.service = service
        self.metrics_ = metrics
        self.access = access
        self.refusals = refusals
        self.accept_when_ready = accept_when_ready
        self.attempts = attempts  # wrong credentials limited per client and route (bot/server/attempts.py)
        self.metrics_access = metrics_access
        # MCP's tools behind /api/ask's door (bot/server/mcp_route.py)
        self.mcp = McpRoute(access, partial(self._caller, route="mcp", path="/mcp"), lambda: service.app,
                            lambda: _unavailable(service), partial(self._refused, route="mcp"))

    @contextlib.asynccontextmanager
    async def lifespan(self, _: Starlette) -> AsyncIterator[None]:
        task = asyncio.create_task(self._start())
        if self.accept_when_ready:
            # one of N workers on a shared socket: a connection taken while loading is one a ready
            # sibling could have answered (a Slack event 503'd on each of its quick retries is lost)
            await asyncio.wait({task})
        try:
            async with self.mcp.running():
                yield
        finally:
            with contextlib.suppress(Exception):
                await task
            await self.service.stop()

    async def _start(self) -> None:
        service = self.service
        await asyncio.to_thread(service.build)
        if service.ready:
            try:
                await service.start_platforms()
            except Exception as exc:
                service.error = f"Telegram: {type(exc).__name__}: {exc}"
                log.exception("Telegram webhook processing could not start")

    async def healthz(self, request: Request) -> Response:
        return PlainTextResponse("ok")

    async def readyz(self, request: Request) -> Response:
        if not self.service.ready or self.service.app is None:
            return _unavailable(self.service)
        report = await run_in_threadpool(_readiness, self.service.app)
        return JSONResponse(report, status_code=200 if report["ready"] else 503)

    async def metrics(self, request: Request) -> Response:
        from prometheus_client import CONTENT_TYPE_LATEST

        authorization = request.headers.get("authorization", "")
        if authorization and (locked := await self.attempts.check("metrics", request)):
            return await self._refused(locked, "metrics")
        forwarded = "x-forwarded-for" in request.headers or "forwarded" in request.headers
        refused = self.metrics_access.check(authorization, self.attempts.client(request), forwarded)
        if refused is not None:
            if refused.reason == "wrong_token":
                await self.attempts.count("metrics", request)
            return await self._refused(refused, "metrics")
        body = await run_in_threadpool(self.metrics_.exposition)
        return Response(body, media_type=CONTENT_TYPE_LATEST)

    async def _caller(self, request: Request, route: str = "api_ask", path: str = "/api/ask") -> Caller | Response:
        """The holder of a request's API token, or the refusal to answer with: 429 for a locked
        client or route (before the token is looked at), 401 without a known token (a wrong one
        counted), 400 for a query string."""
        authorization = request.headers.get("authorization", "")
        if authorization and (locked := await self.attempts.check(route, request)):
            return await self._refused(locked, route)
        caller = self.access.caller(authorization, request.url.query, path)
        if isinstance(caller, Refused):
            if caller.reason == "wrong_token":
                await self.attempts.count(route, request)
            return await self._refused(caller, route)
        return caller

    async def api_ask(self, request: Request) -> Response:
        """Who asks (401 without a known token, 429 after too many wrong ones), what (400), and in
        which scope (403 outside the token's); nothing is searched before all three are settled."""
        caller = await self._caller(request)
        if isinstance(caller, Response):
            return caller
        parsed = parse_ask(await request.body())
        if isinstance(parsed, str):
            return JSONResponse({"error": parsed}, status_code=400)
        msg = incoming(self.access, caller, parsed)
        if isinstance(msg, Refused):
            return await self._refused(msg)
        if self.service.app is None:
            return _unavailable(self.service)

        decision = await run_in_threadpool(self.service.app.ask, msg)
        return JSONResponse(decision_json(decision))

    async def _refused(self, refused: Refused, route: str = "api_ask", *, plain: bool = False) -> Response:
        await run_in_threadpool(self.refusals.record, route, refused)
        if plain:  # the platforms' routes: no bearer token to ask for
            return PlainTextResponse(refused.message, refused.status, headers=refused.headers(bearer=False))
        return JSONResponse({"error": refused.message}, status_code=refused.status, headers=refused.headers())

    async def slack_events(self, request: Request) -> Response:
        service = self.service
        slack = service.worker.slack if service.worker else None
        if slack is None:
            return _unavailable(service) if not service.ready else PlainTextResponse("Slack is not configured", 404)
        signed = "x-slack-signature" in request.headers
        if signed and (locked := await self.attempts.check("slack", request)):
            return await self._refused(locked, "slack", plain=True)
        response: Response = await slack.endpoint(request)
        if response.status_code == 401:  # bolt checked the signature
            if signed:
                await self.attempts.count("slack", request)
            reason = "wrong_signature" if signed else "no_signature"
            await run_in_threadpool(self.refusals.record, "slack", Refused(401, reason, ""))
        return response

    async def telegram_webhook(self, request: Request) -> Response:
        service = self.service
        worker = service.worker
        if worker is None or worker.telegram is None:
            return _unavailable(service) if not service.ready else PlainTextResponse("Telegram is not configured", 404)
        given = request.headers.get(TELEGRAM_SECRET_HEADER, "")
        if given and (locked := await self.attempts.check("telegram", request)):
            return await self._refused(locked, "telegram", plain=True)
        if not hmac.compare_digest(given.encode(), worker.telegram.secret.encode()):
            if given:
                await self.attempts.count("telegram", request)
            return await self._refused(Refused(403, "wrong_secret" if given else "no_secret", "forbidden"),
                                       "telegram", plain=True)
        return await _telegram_update(worker.inbox, await request.body())


def _readiness(app: App) -> dict[str, Any]:
    health = app.store.health()
    try:
        chunks, index_error = app.index.count(), ""
    except Exception as exc:
        chunks, index_error = -1, str(exc).splitlines()[0][:200]
    ready = bool(health["database_readable"]) and chunks >= 0
    return {"ready": ready, "database_readable": health["database_readable"],
            "database_error": health["database_error"], "index_chunks": chunks, "index_error": index_error,
            "embedder": app.embedder.name, "pid": os.getpid()}  # which of the N workers answered


async def _telegram_update(inbox: Inbox, body: bytes) -> Response:
    """Claim the update with its body (any worker; a re-delivery is acknowledged and dropped),
    answer it in the background, and say 200 only once the claim is in the database."""
    try:
        data = json.loads(body)
        int(data["update_id"])
    except (ValueError, KeyError, TypeError):
        return PlainTextResponse("not a Telegram update", 400)
    try:
        await inbox.telegram_update(data)
    except (TypeError, KeyError, AttributeError, ValueError) as exc:  # not an update python-telegram-bot reads
        return PlainTextResponse(f"not a Telegram update: {type(exc).__name__}", 400)
    return Response(status_code=200)  # a database error above is a 500: Telegram sends the update again
