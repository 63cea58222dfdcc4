"""`groundbot telegram`: read the config, build the App and the Telegram adapter, and serve
by long polling or (with --webhook) on a webhook that checks Telegram's secret token."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from bot.config import Config


def cmd_telegram(cfg: Config, args: argparse.Namespace) -> int:
    from bot.platforms import (  # the platform library loads only when its command runs
        build_bot,
        telegram_options,
        webhook_options,
    )

    # check settings before loading models, so a missing token fails in a second, not ten
    try:
        telegram_options(cfg)
        webhook = webhook_options(cfg, port=args.port, listen=args.listen) if args.webhook else None
    except ValueError as exc:
        print(f"groundbot telegram: {exc}", file=sys.stderr)
        return 2
    from bot.app import ready_app

    mode = f"webhook on {webhook.listen}:{webhook.port}/{webhook.url_path}" if webhook else "long polling"

    def ready(username: str) -> None:
        print(f"groundbot is answering on Telegram as @{username} ({mode}). Press Ctrl-C to stop.", file=sys.stderr)

    app = ready_app(cfg)
    bot = build_bot(cfg, app, ready)
    try:
        bot.run(webhook)
    finally:
        app.close()
    return 0


def register(sub: Any) -> None:
    s = sub.add_parser("telegram", help="run the Telegram bot (long polling, or --webhook)")
    s.add_argument("--webhook", action="store_true",
                   help="receive updates on a webhook (telegram.webhook_url) instead of polling")
    s.add_argument("--port", type=int, default=None, help="webhook port (default: telegram.webhook_port)")
    s.add_argument("--listen", default=None, help="webhook bind address (default: telegram.webhook_listen)")
    s.set_defaults(func=cmd_telegram)
