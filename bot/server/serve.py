"""`groundbot serve`: one ASGI application (Starlette on uvicorn) for everything that arrives over
HTTP, run as N identical worker processes sharing one database.

Routes: `GET /healthz` (the process is alive), `GET /readyz` (503 until the database answers,
the index is open and the model is loaded), `GET /metrics` (Prometheus), `POST /api/ask` (the
`ask --json` decision for a web widget or another service; a bearer token per knowledge scope,
bot/server/access.py), the Slack Events API endpoint (slack-bolt's own Starlette adapter, signatures
checked by bolt) and the Telegram webhook (Telegram's secret token checked). The App is built
in the background so /healthz answers at once; each worker builds its own. Several workers share
one port, and there a worker takes connections only once built, leaving them to its ready
siblings. A Slack event or a Telegram update is acknowledged only once it is claimed in the
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
import threading
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from bot.app import App, settle_heap
from bot.config import Config
from bot.server.access import ApiAccess, Refusals, Refused, review_tokens
from bot.server.api_ask import incoming, parse_ask
from bot.server.deliveries import Inbox
from bot.server.metrics import Metrics
from bot.server.shared import SharedOnce, SharedRateLimit, SharedThreads, serve_hooks
from bot.server.sync_schedule import SyncSchedule
from core.render import decision_json

log = logging.getLogger("groundbot.serve")

TELEGRAM_SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"


@dataclass
class Service:
    """One worker's state: the App once built, and the platform front ends hung on it."""

    config: Config
    app_factory: Callable[[], App]
    metrics: Metrics
    app: App | None = None
    state: Any = None  # storage.records.shared_state.SharedState once built
    slack: Any = None  # adapters.slack.SlackAdapter when Slack is configured
    slack_endpoint: Any = None  # bolt's Starlette adapter over the adapter's bolt App
    telegram: Any = None  # adapters.telegram.TelegramBot when the webhook is configured
    telegram_secret: str = ""
    inbox: Inbox | None = None  # claims of Slack events and Telegram updates until answered
    schedule: SyncSchedule | None = None  # syncs the [[sources]] on their intervals
    access_log: Any = None  # storage.records.access.AccessLog: refusals of access, once built
    error: str = ""
    _built: threading.Event = field(default_factory=threading.Event)

    @property
    def ready(self) -> bool:
        return self.app is not None

    def build(self) -> None:
        """Load the model, open the index and the database, wire the front ends (in a thread)."""
        from storage.records.access import AccessLog
        from storage.records.shared_state import SharedState

        try:
            app = self.app_factory()
            serve = self.config.serve
            state = SharedState(app.store.engine, lease_s=serve.conversation_lease_s, stale_s=serve.delivery_stale_s)
            serve_hooks(app.hooks, state, self.metrics)
            self.metrics.watch_review_queue(lambda: _or_none(app.store.review_queue_depth))
            self._slack(app, state)
            self._telegram(app, state)
            self.inbox = Inbox(state, self.metrics, telegram=self.telegram, slack=self.slack,
                               slack_secret=self.config.secret(self.config.slack.signing_secret_env))
            # before the first refusal, not during it (cached: ready_app may have checked already)
            app.check_suggestions()
            app.index.warm()  # each table's index files opened before the first question
            settle_heap()  # workers of several are built by build_app, which does not settle it
            self.state = state
            self.access_log = AccessLog(app.store.engine)
            self.app = app
            self.schedule = SyncSchedule(app.syncer, serve.sync_check_s)
            self.schedule.start()
            self.metrics.ready.set(1)
        except Exception as exc:
            self.error = f"{type(exc).__name__}: {exc}"
            log.exception("groundbot serve could not start")
        finally:
            self._built.set()

    def _slack(self, backend: App, state: Any) -> None:
        cfg = self.config
        token, signing = cfg.secret(cfg.slack.bot_token_env), cfg.secret(cfg.slack.signing_secret_env)
        if not token or not signing:
            return
        from adapters.slack import events_endpoint
        from bot.platforms import SlackSecrets, build_adapter

        self.slack = build_adapter(cfg, backend, SlackSecrets(token, "", signing), state)
        self.slack.once = SharedOnce(state, self.metrics, "slack")
        self.slack_endpoint = events_endpoint(self.slack.app)

    def _telegram(self, backend: App, state: Any) -> None:
        cfg = self.config
        secret = cfg.secret(cfg.telegram.webhook_secret_env)
        if not cfg.secret(cfg.telegram.token_env) or not secret:
            return
        from adapters.telegram import TelegramBot
        from bot.platforms import telegram_options

        options = telegram_options(cfg)
        self.telegram = TelegramBot(backend, options, threads=SharedThreads(state),
                                    rate_limit=SharedRateLimit(state, options.rate_limit_per_minute))
        self.telegram_secret = secret

    async def start_platforms(self) -> None:
        """Start the delivery sweeper, Telegram's update processing (and register the webhook
        when a URL is configured)."""
        if self.inbox is not None:
            self.inbox.start()
        if self.telegram is None:
            return
        application = self.telegram.application
        await application.initialize()
        await self.telegram.delivery.bind()  # admins' cards and reviewed answers can leave before any update arrives
        await application.start()
        url = self.config.telegram.webhook_url
        if url:
            from adapters.telegram import ALLOWED_UPDATES

            await self.telegram.bot.set_webhook(url, secret_token=self.telegram_secret,
                                                allowed_updates=ALLOWED_UPDATES)

    async def stop(self) -> None:
        """Finish work already acknowledged: Telegram updates and Slack answers in progress."""
        if self.inbox is not None:
            await self.inbox.stop()
        if self.schedule is not None:
            await run_in_threadpool(self.schedule.stop)
        if self.telegram is not None and self.telegram.application.running:
            await self.telegram.stop()
        if self.slack is not None:
            await run_in_threadpool(self.slack.close)
        if self.state is not None:
            self.state.stop_heartbeat()


def _or_none(fn: Callable[[], int]) -> int | None:
    try:
        return fn()
    except Exception:  # a scrape must not fail because the database is away
        return None


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

    access = ApiAccess.of(config)
    metrics = Metrics(metrics_dir)
    service = Service(config, app_factory or (lambda: ready_app(config)), metrics)
    refusals = Refusals(metrics, lambda: service.access_log)
    ep = _Endpoints(config, service, metrics, access, refusals, accept_when_ready=accept_when_ready)
    routes = [
        Route("/healthz", ep.healthz, methods=["GET"]),
        Route("/readyz", ep.readyz, methods=["GET"]),
        Route("/metrics", ep.metrics, methods=["GET"]),
        Route("/api/ask", ep.api_ask, methods=["POST"]),
        Route(config.serve.slack_path, ep.slack_events, methods=["POST"]),
        Route(config.serve.telegram_path, ep.telegram_webhook, methods=["POST"]),
    ]
    tokens = review_tokens(config)
    if tokens:  # the review queue's web page, for admins holding a token (of every scope, or of one)
        from bot.server.review_page import ReviewPage

        routes += ReviewPage(tokens, lambda: service.app, refusals,
                             session_hours=config.serve.review_session_hours).routes()
    asgi = Starlette(routes=routes, lifespan=ep.lifespan)
    asgi.state.service = service
    return asgi


class _Endpoints:
    """The routes of one worker, and its lifespan: build the App off the event loop, then
    start Telegram's update processing; on shutdown finish the work already acknowledged."""

    def __init__(self, config: Config, service: Service, metrics: Metrics, access: ApiAccess, refusals: Refusals, *,
                 accept_when_ready: bool = False) -> None:
        self.config = config
        self.service = service
        self.metrics_ = metrics
        self.access = access
        self.refusals = refusals
        self.accept_when_ready = accept_when_ready

    @contextlib.asynccontextmanager
    async def lifespan(self, _: Starlette) -> AsyncIterator[None]:
        task = asyncio.create_task(self._start())
        if self.accept_when_ready:
            # one of N workers on a shared socket: a connection taken while loading is one a ready
            # sibling could have answered (a Slack event 503'd on each of its quick retries is lost)
            await asyncio.wait({task})
        try:
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

        body = await run_in_threadpool(self.metrics_.exposition)
        return Response(body, media_type=CONTENT_TYPE_LATEST)

    async def api_ask(self, request: Request) -> Response:
        """Who asks (401 without a known token), what (400), and in which scope (403 outside the
        token's); nothing is searched before all three are settled."""
        caller = self.access.caller(request.headers.get("authorization", ""), request.url.query)
        if isinstance(caller, Refused):
            return await self._refused(caller)
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

    async def _refused(self, refused: Refused) -> Response:
        await run_in_threadpool(self.refusals.record, "api_ask", refused)
        headers = {"WWW-Authenticate": "Bearer"} if refused.status == 401 else None
        return JSONResponse({"error": refused.message}, status_code=refused.status, headers=headers)

    async def slack_events(self, request: Request) -> Response:
        service = self.service
        if service.slack_endpoint is None:
            return _unavailable(service) if not service.ready else PlainTextResponse("Slack is not configured", 404)
        response: Response = await service.slack_endpoint(request)
        return response

    async def telegram_webhook(self, request: Request) -> Response:
        service = self.service
        if service.telegram is None:
            return _unavailable(service) if not service.ready else PlainTextResponse("Telegram is not configured", 404)
        given = request.headers.get(TELEGRAM_SECRET_HEADER, "")
        if not hmac.compare_digest(given.encode(), service.telegram_secret.encode()):
            return PlainTextResponse("forbidden", 403)
        return await _telegram_update(service, await request.body())


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


async def _telegram_update(service: Service, body: bytes) -> Response:
    """Claim the update with its body (any worker; a re-delivery is acknowledged and dropped),
    answer it in the background, and say 200 only once the claim is in the database."""
    try:
        data = json.loads(body)
        int(data["update_id"])
    except (ValueError, KeyError, TypeError):
        return PlainTextResponse("not a Telegram update", 400)
    assert service.inbox is not None
    try:
        await service.inbox.telegram_update(data)
    except (TypeError, KeyError, AttributeError, ValueError) as exc:  # not an update python-telegram-bot reads
        return PlainTextResponse(f"not a Telegram update: {type(exc).__name__}", 400)
    return Response(status_code=200)  # a database error above is a 500: Telegram sends the update again


# -- the command ------------------------------------------------------------------------
class WorkerApp:
    """A picklable ASGI app for uvicorn's worker processes: each builds its own Starlette app."""

    def __init__(self, config: Config, metrics_dir: Path | None, *, ingest_if_empty: bool = True) -> None:
        self.config = config
        self.metrics_dir = metrics_dir
        self.ingest_if_empty = ingest_if_empty
        self._asgi: Starlette | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {"config": self.config, "metrics_dir": self.metrics_dir, "ingest_if_empty": self.ingest_if_empty,
                "_asgi": None}

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if self._asgi is None:
            from bot.logs.redact import install_redaction
            from bot.logs.setup import configure_logging

            configure_logging(self.config.log.format, self.config.log.level)  # a fresh process: its own handler
            install_redaction(self.config.secrets)  # ... and redaction, before anything logs
            from bot.app import build_app, ready_app

            cfg = self.config
            # several workers must not all ingest an empty index at once: `groundbot ingest` first
            factory = (lambda: ready_app(cfg)) if self.ingest_if_empty else (lambda: build_app(cfg))
            # several workers share the port: each takes connections only once it can answer them
            self._asgi = build_asgi(cfg, app_factory=factory, metrics_dir=self.metrics_dir,
                                    accept_when_ready=self.metrics_dir is not None)
        await self._asgi(scope, receive, send)


def serve(config: Config, host: str, port: int, workers: int) -> int:
    """Run uvicorn: in this process for one worker, else a supervisor restarting dead workers.
    The exit status: 0, or uvicorn's STARTUP_FAILURE (3) when the app could not start."""
    import tempfile

    import uvicorn

    from bot.server.metrics import use_prometheus_multiprocess

    if workers <= 1:
        uv = uvicorn.Config(WorkerApp(config, None), host=host, port=port, log_level="warning", log_config=None,
                            timeout_graceful_shutdown=60, lifespan="on")
        server = uvicorn.Server(uv)
        server.run()  # exits with STARTUP_FAILURE itself when the app cannot start
        return 0
    from bot.server.supervisor import Supervisor, bind

    with tempfile.TemporaryDirectory(prefix="groundbot-metrics-") as metrics_dir:
        use_prometheus_multiprocess(metrics_dir)  # workers inherit it; their counters are summed
        uv = uvicorn.Config(WorkerApp(config, Path(metrics_dir), ingest_if_empty=False), host=host, port=port,
                            log_level="warning", log_config=None, timeout_graceful_shutdown=60, lifespan="on")
        with bind(host, port) as sock:
            return Supervisor(uv, sock, workers).run()  # replaces a worker that dies
