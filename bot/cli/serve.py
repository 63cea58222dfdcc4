"""`groundbot serve`: the command line of the HTTP server (bot/server/http_app.py), which is
imported only when the command runs."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from bot.config import Config


def cmd_serve(cfg: Config, args: argparse.Namespace) -> int:
    from bot.server.scope_access import AccessConfigError, ApiAccess, review_tokens

    try:  # before anything starts: a configuration that would leave scopes open is not served
        ApiAccess.of(cfg)
        review_tokens(cfg)
    except AccessConfigError as exc:
        print(f"groundbot serve: {exc}", file=sys.stderr)
        return 2
    s = cfg.serve
    host = args.host or s.host
    port = s.port if args.port is None else args.port
    workers = s.workers if args.workers is None else args.workers
    fronts = [name for name, on in (
        ("Slack", cfg.secret(cfg.slack.bot_token_env) and cfg.secret(cfg.slack.signing_secret_env)),
        ("Telegram webhook", cfg.secret(cfg.telegram.token_env) and cfg.secret(cfg.telegram.webhook_secret_env)),
    ) if on]
    print(f"groundbot serve on http://{host}:{port} with {workers} worker(s): /api/ask, /healthz, /readyz, /metrics"
          + "".join(f", {f}" for f in fronts) + ". Press Ctrl-C to stop.", file=sys.stderr)
    if workers > 1 and not cfg.storage.index_uri and not cfg.index_path.exists():
        print(f"groundbot serve: the index {cfg.index_path} does not exist yet; with several workers run "
              "'groundbot ingest' first (one worker ingests the configured KB on its first start)", file=sys.stderr)
        return 2
    from bot.server.run import serve

    return serve(cfg, host, port, workers)


def register(sub: Any) -> None:
    s = sub.add_parser("serve", help="serve Slack, the Telegram webhook, /api/ask and /metrics over HTTP")
    s.add_argument("--host", default=None, help="bind address (default: serve.host)")
    s.add_argument("--port", type=int, default=None, help="port (default: serve.port)")
    s.add_argument("--workers", type=int, default=None, help="worker processes (default: serve.workers)")
    s.set_defaults(func=cmd_serve)
