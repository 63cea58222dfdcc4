"""`groundbot slack`: read the config, build the App and the Slack adapter, and serve over
Socket Mode (default; no public URL needed) or, with --http, on the Events API endpoint."""

from __future__ import annotations

import argparse
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

from bot.config import Config


@contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """Stop on SIGTERM like on Ctrl-C, so answers in flight are finished and posted."""

    def stop(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def cmd_slack(cfg: Config, args: argparse.Namespace) -> int:
    if args.manifest:
        return print_manifest(cfg)
    from bot.platforms import build_adapter, slack_secrets  # the platform library loads only when its command runs

    # check settings before loading models, so a missing token fails in a second, not ten
    try:
        secrets = slack_secrets(cfg, http=args.http)
    except ValueError as exc:
        print(f"groundbot slack: {exc}", file=sys.stderr)
        return 2
    from bot.app import ready_app
    from storage.records.reply_threads import ReplyThreads

    app = ready_app(cfg)
    try:
        adapter = build_adapter(cfg, app, secrets, ReplyThreads(app.store.engine))
    except Exception as exc:  # bad token, unreachable API: say so instead of a traceback
        print(f"groundbot slack: cannot connect to the Slack Web API: {exc}", file=sys.stderr)
        return 2
    with _sigterm_as_interrupt():
        try:
            if args.http:
                port = cfg.slack.http_port if args.port is None else args.port
                server = adapter.http_server(args.host, port, args.path)
                print(f"groundbot is answering on Slack (HTTP, {args.host}:{server.port}{args.path}). "
                      "Press Ctrl-C to stop.", file=sys.stderr)
                try:
                    server.serve_forever()
                finally:
                    server.shutdown()
            else:
                handler = adapter.socket_mode(secrets.app_token)
                print("groundbot is answering on Slack (Socket Mode). Press Ctrl-C to stop.", file=sys.stderr)
                try:
                    handler.start()
                finally:
                    handler.close()
        except KeyboardInterrupt:
            print("Stopping; finishing answers in progress ...", file=sys.stderr)
        finally:
            adapter.close()
            app.close()
    return 0


def print_manifest(cfg: Config) -> int:
    """The Slack app manifest with the agent view's suggested prompts drawn from this knowledge
    base (its most asked answered questions, then its own FAQ questions and question headings)."""
    import json

    from adapters.slack.manifest import manifest
    from bot.app import ready_app
    from core.messages import Platform

    app = ready_app(cfg)
    print(json.dumps(manifest(app.prompts(Platform.SLACK, "")), indent=2, ensure_ascii=False))
    return 0


def register(sub: Any) -> None:
    s = sub.add_parser("slack", help="run the Slack bot (Socket Mode, or --http for the Events API)")
    s.add_argument("--http", action="store_true",
                   help="serve the Events API over HTTP (signature-checked) instead of Socket Mode")
    s.add_argument("--host", default="0.0.0.0", help="HTTP bind address (default: 0.0.0.0)")
    s.add_argument("--port", type=int, default=None, help="HTTP port (default: slack.http_port)")
    s.add_argument("--path", default="/slack/events",
                   help="HTTP path for events, commands and interactivity (default: /slack/events)")
    s.add_argument("--manifest", action="store_true",
                   help="print the Slack app manifest, its suggested prompts drawn from the knowledge base, and exit")
    s.set_defaults(func=cmd_slack)
