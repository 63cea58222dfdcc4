"""`groundbot sync [NAME...] [--json]`: sync the configured sources (config.toml [[sources]])."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from bot.config import Config


def cmd_sync(cfg: Config, args: argparse.Namespace) -> int:
    from bot.app import build_app
    from bot.cli.main import _progress_bar
    from bot.services.syncing import UnknownSource

    if not cfg.sources:
        print("groundbot: no [[sources]] in the configuration; see docs/sources.md", file=sys.stderr)
        return 2
    app = build_app(cfg)
    try:
        reports = app.syncer.sync(args.names or None, progress=_progress_bar())
    except UnknownSource as exc:
        print(f"groundbot: {exc}", file=sys.stderr)
        return 2
    if any(r.summary.added or r.summary.updated or r.summary.removed for r in reports):
        app.check_suggestions()
    if args.json:
        print(json.dumps({"sources": [r.to_dict() for r in reports]}, ensure_ascii=False))
    else:
        for r in reports:
            print(r.line())
    return 0 if all(r.ok for r in reports) else 4


def register(sub: Any) -> None:
    s = sub.add_parser("sync", help="sync the configured sources (websites, Git repositories, wikis)",
                       epilog="exit code 4: a source failed (its documents were left as they were)")
    s.add_argument("names", nargs="*", metavar="NAME", help="sources to sync (default: all of them)")
    s.add_argument("--json", action="store_true", help="print machine-readable JSON on stdout: one report per source")
    s.set_defaults(func=cmd_sync)
