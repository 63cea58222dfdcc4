"""How `groundbot serve` runs its ASGI app (bot/server/http_app.py): one uvicorn server in this
process, or groundbot's supervisor over N worker processes sharing one socket
(bot/server/supervisor.py). uvicorn's own reading of X-Forwarded-For is off: it trusts any
local peer's header by default, and only `[serve] trusted_proxies` may name a client
(build_asgi applies uvicorn's middleware with that list)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from starlette.applications import Starlette

from bot.config import Config
from bot.server.http_app import build_asgi


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
                            timeout_graceful_shutdown=60, lifespan="on", proxy_headers=False)
        server = uvicorn.Server(uv)
        server.run()  # exits with STARTUP_FAILURE itself when the app cannot start
        return 0
    from bot.server.supervisor import Supervisor, bind

    with tempfile.TemporaryDirectory(prefix="groundbot-metrics-") as metrics_dir:
        use_prometheus_multiprocess(metrics_dir)  # workers inherit it; their counters are summed
        uv = uvicorn.Config(WorkerApp(config, Path(metrics_dir), ingest_if_empty=False), host=host, port=port,
                            log_level="warning", log_config=None, timeout_graceful_shutdown=60, lifespan="on",
                            proxy_headers=False)  # only [serve] trusted_proxies' forwarded-for counts (build_asgi)
        with bind(host, port) as sock:
            return Supervisor(uv, sock, workers).run()  # replaces a worker that dies
