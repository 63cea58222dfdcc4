"""The `groundbot` command line: chat, ask, ingest, stats, calibrate, telegram, slack, serve, mcp."""

from __future__ import annotations

import argparse
import json
import logging
import sys
import uuid
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, BinaryIO

from bot.config import Config, load_config
from core.messages import ConversationKey, Incoming, Platform
from core.render import decision_json


def _progress_bar() -> Any:
    from tqdm import tqdm

    bars: dict[str, Any] = {}

    def report(phase: str, done: int, total: int) -> None:
        bar = bars.get(phase)
        if bar is None:
            # disable=None: drawn on a terminal only, never into a log file or CI output
            bar = bars[phase] = tqdm(total=total, desc=phase, unit="item", file=sys.stderr, leave=False, disable=None)
        bar.update(done - bar.n)
        if done >= total:
            bar.close()

    return report


def cmd_ingest(cfg: Config, args: argparse.Namespace) -> int:
    from bot.app import build_app

    app = build_app(cfg)
    paths = args.paths or list(cfg.paths.kb_paths)
    summary = app.ingest(paths, progress=_progress_bar())
    app.check_suggestions()  # decided once here, read by every worker
    if args.json:
        print(json.dumps(summary.to_dict(), ensure_ascii=False))
    else:
        print(f"Ingested {', '.join(map(str, paths))}: {summary.line()}")
        print(f"Index version {summary.index_version}, {app.index.count()} chunks in {cfg.index_location}")
    return 0


def stdin_questions(stream: BinaryIO) -> Iterator[tuple[str, str]]:
    """(question, rejection) per input line: bytes are decoded line by line, so one line
    that is not UTF-8 is rejected on its own and never takes the rest of the batch down."""
    for raw in stream:
        line = raw[:-1] if raw.endswith(b"\n") else raw
        line = line[:-1] if line.endswith(b"\r") else line
        try:
            yield line.decode("utf-8"), ""
        except UnicodeDecodeError as exc:
            yield line.decode("utf-8", errors="replace"), (
                f"The line is not valid UTF-8 text (byte {exc.start + 1} of {len(line)}); please send it as UTF-8.")


def cmd_ask(cfg: Config, args: argparse.Namespace) -> int:
    """Answer one question, or one per stdin line (exactly one decision per line, in order)."""
    from bot.app import build_app
    from core.render import render_text

    given = args.question_opt if args.question_opt is not None else args.question
    if given is None or (args.question_opt is not None and args.question is not None):
        print("groundbot ask: give one question (or '-' to read one per line from stdin)", file=sys.stderr)
        return 2
    scope = _scope(cfg, args)
    if scope == "":
        return 2
    app = build_app(cfg)
    questions: Iterable[tuple[str, str]] = stdin_questions(sys.stdin.buffer) if given == "-" else [(given, "")]
    unrecorded = 0
    for question, rejection in questions:
        chat = args.chat or f"ask-{uuid.uuid4().hex[:12]}"
        decision = app.ask(Incoming(ConversationKey(Platform.CLI, chat), args.user, question, rejection=rejection, scope=scope))
        if args.json:
            print(json.dumps(decision_json(decision), ensure_ascii=False), flush=True)
        else:
            print(render_text(decision), flush=True)
        if not decision.recorded:
            unrecorded += 1
            print(f"groundbot: turn {decision.turn_uid} was NOT recorded: neither the transcript database nor "
                  f"the spool ({cfg.spool_path}) could be written", file=sys.stderr)
    return 3 if unrecorded else 0


def cmd_doctor(cfg: Config, args: argparse.Namespace) -> int:
    """Check the transcript database, the spool and the index; `--replay` moves spooled turns in."""
    from bot.app import build_app

    app = build_app(cfg)
    report = app.doctor(replay=args.replay)
    if args.json:
        print(json.dumps(report, ensure_ascii=False))
    else:
        for key, value in report.items():
            print(f"{key}: {value}")
    return 0 if report["database_writable"] and report["spooled_turns"] == 0 else 1


def _scope(cfg: Config, args: argparse.Namespace) -> str | None:
    """The knowledge scope `--scope` names (None: the chat's own), or "" after saying why it is
    not one: nothing is answered from an unknown scope."""
    from bot.scopes import ScopeError

    if args.scope is None:
        return None
    try:
        return cfg.scope_map().check(args.scope)
    except ScopeError as exc:
        print(f"groundbot: {exc}", file=sys.stderr)
        return ""


def cmd_chat(cfg: Config, args: argparse.Namespace) -> int:
    from adapters.console import ConsoleChat
    from bot.app import ready_app

    scope = _scope(cfg, args)
    if scope == "":
        return 2
    app = ready_app(cfg, progress=_progress_bar())
    try:
        ConsoleChat(app, user_id=args.user, session=args.session, scope=scope).run()
    finally:
        app.close()
    return 0


def cmd_stats(cfg: Config, args: argparse.Namespace) -> int:
    from bot.app import build_app
    from bot.services.commands import stats_reply

    scope = _scope(cfg, args)
    if scope == "":
        return 2
    data = build_app(cfg).stats(scope)
    print(json.dumps(data, ensure_ascii=False) if args.json else stats_reply(data).text)
    return 0


EXIT_CODES = """exit codes:
  0    done
  1    doctor: the database is not writable or turns wait in the spool
  2    a configuration or usage error (nothing ran)
  3    ask: a turn could be recorded neither in the database nor in the spool;
       serve: the app could not start (a worker's startup failed)
  4    sync: a source failed (its documents were left as they were)
  130  interrupted (Ctrl-C)"""
JSON_HELP = "print machine-readable JSON on stdout (messages go to stderr)"
SCOPE_HELP = ("answer from this knowledge scope ([[scopes]] in config.toml; an unknown name is an error); "
              "default: the scope that serves this chat")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="groundbot", description="Grounded answers from your knowledge base, or an honest refusal.",
                                epilog=EXIT_CODES, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    p.add_argument("--config", help="config.toml to use (default: ./config.toml if present, else built-in defaults)")
    p.add_argument("--data-dir", help="where transcripts and the index live (overrides paths.data_dir)")
    p.add_argument("-v", "--verbose", action="store_true", help="log debug output")
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("chat", help="chat in the terminal")
    s.add_argument("--user", default="local", help="user id (admins are listed in config)")
    s.add_argument("--session", default="console", help="conversation id; the same id continues a conversation")
    s.add_argument("--scope", default=None, metavar="NAME", help=SCOPE_HELP)
    s.set_defaults(func=cmd_chat)

    s = sub.add_parser("ask", help="ask one question ('-' reads one question per line from stdin)",
                       epilog="A question that starts with a dash goes after '--': groundbot ask -- '-rf means what?'; "
                              "or use -q/--question.")
    s.add_argument("question", nargs="?", help="the question, or '-' to read one per line from stdin")
    s.add_argument("-q", "--question", dest="question_opt", metavar="TEXT",
                   help="the question (may start with a dash: -q='-rf')")
    s.add_argument("--json", action="store_true", help=JSON_HELP + ": the decision record, one object per question")
    s.add_argument("--user", default="cli", help="user id recorded with the turn (default: cli)")
    s.add_argument("--chat", default="", help="conversation id to continue (default: a fresh one per question)")
    s.add_argument("--scope", default=None, metavar="NAME", help=SCOPE_HELP)
    s.set_defaults(func=cmd_ask)

    s = sub.add_parser("ingest", help="ingest files or folders (default: paths.kb_paths)")
    s.add_argument("paths", nargs="*", help="files or folders to ingest (default: paths.kb_paths)")
    s.add_argument("--json", action="store_true", help=JSON_HELP + ": the ingest summary")
    s.set_defaults(func=cmd_ingest)

    s = sub.add_parser("stats", help="turns, answer and refusal rates, latency, index size")
    s.add_argument("--json", action="store_true", help=JSON_HELP + ": every figure")
    s.add_argument("--scope", default=None, metavar="NAME", help="only the turns of this knowledge scope")
    s.set_defaults(func=cmd_stats)

    s = sub.add_parser("doctor", help="check the database, the turn spool and the index")
    s.add_argument("--replay", action="store_true", help="move spooled turns into the transcript database")
    s.add_argument("--json", action="store_true", help=JSON_HELP + ": the checks")
    s.set_defaults(func=cmd_doctor)

    _register_optional(sub)
    return p


def _register_optional(sub: Any) -> None:
    """Commands that live in their own modules (platform runners, calibration)."""
    import importlib

    for module in ("bot.cli.calibrate", "bot.cli.run_telegram", "bot.cli.run_slack", "bot.cli.serve", "bot.cli.report",
                   "bot.cli.sync", "bot.cli.mcp"):
        try:
            mod = importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name != module:
                raise
            continue
        mod.register(sub)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("groundbot")
    except PackageNotFoundError:  # run from a source tree that was not installed
        return "unknown"


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        cfg = load_config(args.config, data_dir=args.data_dir)
    except (OSError, ValueError) as exc:
        print(f"groundbot: configuration error: {exc}", file=sys.stderr)
        return 2
    from bot.logs.redact import install_redaction
    from bot.logs.setup import configure_logging

    configure_logging(cfg.log.format, cfg.log.level, verbose=args.verbose)  # [log]: text or JSON lines
    install_redaction(cfg.secrets)  # before anything can log a URL or header holding a token
    try:
        return int(args.func(cfg, args))
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
