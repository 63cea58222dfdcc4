"""Load benchmark of `groundbot serve`: N workers behind one port on one database, Telegram and
Slack conversations through their real webhook paths, re-deliveries, and a worker killed.

    nice -n 10 python -m bench.system.load --db postgresql --workers 4            # 50 conversations x 20
    nice -n 10 python -m bench.system.load --db sqlite --workers 1 --no-kill      # the baseline
    nice -n 10 python -m bench.system.load --conversations 20 --messages 10       # scaled down
    nice -n 10 python -m bench.system.load --scopes                               # two knowledge scopes

Starts, in a temporary directory: a PostgreSQL server on 127.0.0.1 (as tests/postgres.py does;
or a SQLite file), the Telegram and Slack stand-ins of tests/scenario/ (they receive the bot's
replies), `groundbot ingest` of docs/, then `groundbot serve --workers N` as a subprocess.
Half the conversations are Telegram private chats (webhook updates with the secret token),
half Slack threads (signed Events API callbacks). A share of Telegram updates is delivered
twice and a share of Slack events re-sent as retries; a delivery the server did not take is
re-sent, as the platforms do (Telegram while it gets no 2xx; Slack when no 2xx came within 3 s,
3 retries marked X-Slack-Retry-Num). When half the messages have been sent, one worker gets SIGKILL;
groundbot's supervisor (bot/server/supervisor.py) starts a replacement. Afterwards the transcript database is read: every
message should be recorded exactly once, answered once, and each conversation's turns in the
order it sent them. With --scopes, Telegram chats and Slack channels are served by two knowledge
scopes over docs/ (docs/scopes.md), so every search is prefiltered, and the turns are counted
per scope. Results: bench/results/load-<db>-<N>w.json (load-<db>-<N>w-scopes.json with --scopes)
and load.md (every load-*.json present); the headline figures are appended to
bench/results/history.csv.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import numpy as np
from sqlalchemy import create_engine, text

from bench import RESULTS, ROOT
from bench.history import record
from bench.system.load_traffic import TAG, Replies, Tally, Target, conversation
from tests.ports import free_port
from tests.processes import worker_pids
from tests.standins.slack import SlackStandIn
from tests.standins.telegram import TelegramStandIn

TG_SECRET = "load-webhook-secret"
SLACK_SECRET = "load-signing-secret"


SCOPES = """
[[scopes]]
name = "telegram-users"
paths = ["{docs}"]
chats = ["telegram"]
[[scopes]]
name = "slack-users"
paths = ["{docs}"]
chats = ["slack"]
"""


def write_config(folder: Path, db_url: str, tg_base: str, slack_api: str, port: int, scopes: bool = False) -> Path:
    cfg = folder / "config.toml"
    cfg.write_text(f"""
[paths]
data_dir = "{(folder / 'data').as_posix()}"
kb_paths = ["{(ROOT / 'docs').as_posix()}"]
[storage]
database_url = "{db_url}"
[telegram]
base_url = "{tg_base}"
webhook_url = "http://127.0.0.1:{port}/telegram"
rate_limit_per_minute = 0
[slack]
api_base_url = "{slack_api}"
[serve]
conversation_lease_s = 15.0
""" + (SCOPES.format(docs=(ROOT / "docs").as_posix()) if scopes else ""), encoding="utf-8")
    return cfg


async def wait_ready(url: str, standin: TelegramStandIn, workers: int, timeout_s: float) -> None:
    """Every worker registers the webhook once it is ready; wait for all N and /readyz."""
    deadline = time.monotonic() + timeout_s
    async with httpx.AsyncClient(timeout=10) as client:
        while time.monotonic() < deadline:
            try:
                ready = (await client.get(url + "/readyz")).status_code == 200
            except httpx.TransportError:
                ready = False
            if ready and len(standin.of("setWebhook")) >= workers:
                return
            await asyncio.sleep(0.5)
    raise RuntimeError(f"groundbot serve was not ready within {timeout_s:.0f} s")


async def killer(serve: subprocess.Popen[bytes], tally: Tally, total: int, standin: TelegramStandIn,
                 report: dict[str, Any]) -> None:
    """SIGKILL one worker when half the messages are sent; time how long until a replacement is ready."""
    while len(tally.sent_at) < total // 2:
        await asyncio.sleep(0.05)
    before = worker_pids(serve.pid)
    victim = sorted(before)[0]
    registered = len(standin.of("setWebhook"))
    os.kill(victim, signal.SIGKILL)
    killed_at = time.monotonic()
    report.update(killed_pid=victim, killed_after_messages=len(tally.sent_at))
    while time.monotonic() - killed_at < 300:
        now = worker_pids(serve.pid)
        if "replacement_pid" not in report and now - before:
            report["replacement_pid"] = sorted(now - before)[0]
            report["replacement_started_s"] = round(time.monotonic() - killed_at, 2)
        if len(standin.of("setWebhook")) > registered:
            report["replacement_ready_s"] = round(time.monotonic() - killed_at, 2)
            return
        await asyncio.sleep(0.1)


def read_turns(db_url: str) -> list[tuple[int, str, str]]:
    engine = create_engine(db_url)
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT id, platform, question FROM turn ORDER BY id")).all()
    engine.dispose()
    return [(int(r[0]), str(r[1]), str(r[2])) for r in rows]


def read_scopes(db_url: str) -> dict[str, int]:
    """Turns by the knowledge scope they were answered from ("" = none)."""
    engine = create_engine(db_url)
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT scope, COUNT(*) FROM turn GROUP BY scope")).all()
    engine.dispose()
    return {str(r[0]): int(r[1]) for r in rows}


def read_claims(db_url: str) -> dict[str, int]:
    """Delivery rows by state after the run (claimed ones were never answered)."""
    engine = create_engine(db_url)
    try:
        with engine.connect() as conn:
            rows = conn.execute(text("SELECT state, COUNT(*) FROM delivery GROUP BY state")).all()
    except Exception:  # a database from before delivery claims
        return {}
    finally:
        engine.dispose()
    return {str(r[0]): int(r[1]) for r in rows}


async def taken_over(url: str) -> dict[str, float]:
    """groundbot_deliveries_taken_over_total by platform, summed over the workers."""
    out: dict[str, float] = {}
    async with httpx.AsyncClient(timeout=30) as client:
        for line in (await client.get(url + "/metrics")).text.splitlines():
            if line.startswith("groundbot_deliveries_taken_over_total{"):
                platform = line.split('platform="', 1)[1].split('"', 1)[0]
                out[platform] = out.get(platform, 0.0) + float(line.rsplit(" ", 1)[1])
    return out


def found_sent(log: Path) -> dict[str, int]:
    """Taken-over questions whose reply had gone out before their worker died (so not sent again),
    by platform, from the workers' log: each of these was a duplicate reply before the check."""
    out: dict[str, int] = {}
    for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
        if "answered before its worker died" in line:
            platform = "slack" if "groundbot.slack" in line else "telegram"
            out[platform] = out.get(platform, 0) + 1
    return out


def pct(values: list[float], q: float) -> float:
    return round(float(np.percentile(np.asarray(values), q)), 1) if values else 0.0


def summarize(args: argparse.Namespace, tally: Tally, turns: list[tuple[int, str, str]], wall_s: float,
              kill: dict[str, Any]) -> dict[str, Any]:
    """The figures: exactly-once recording, duplicate replies, order, latency, throughput."""
    sent = set(tally.sent_at)
    recorded: Counter[tuple[int, int]] = Counter()
    order: dict[int, list[int]] = {}
    for _, _, question in turns:
        m = TAG.search(question)
        if m:
            key = (int(m.group(1)), int(m.group(2)))
            recorded[key] += 1
            order.setdefault(key[0], []).append(key[1])
    out_of_order = {c: sum(1 for a, b in zip(seqs, seqs[1:], strict=False) if b <= a) for c, seqs in order.items()}
    violations = sum(out_of_order.values())
    latencies = [(tally.replied_at[k] - tally.sent_at[k]) * 1000 for k in sent if k in tally.replied_at]
    return {
        "db": args.db, "workers": args.workers, "conversations": args.conversations, "messages": args.messages,
        "redeliver_share": args.redeliver_share, "worker_killed": not args.no_kill, "kill": kill,
        "messages_sent": len(sent), "deliveries_posted": tally.posts, "redeliveries": tally.redeliveries,
        "deliveries_not_taken": tally.failed_posts, "messages_given_up": tally.given_up,
        "turns_recorded": len(turns),
        "messages_recorded_once": sum(1 for k in sent if recorded[k] == 1),
        "messages_not_recorded": sum(1 for k in sent if recorded[k] == 0),
        "messages_recorded_twice_or_more": sum(1 for k in sent if recorded[k] > 1),
        "messages_replied": sum(1 for k in sent if tally.replies[k] >= 1),
        "replies_received": sum(tally.replies.values()),
        # a conversation's k-th reply is counted as message k's, so an extra reply shows past its last message
        "duplicate_replies": sum(n for k, n in tally.replies.items() if k not in sent),
        "duplicate_reply_conversations": sorted({k[0] for k, n in tally.replies.items() if k not in sent and n}),
        "order_violations": violations,
        "order_violation_conversations": sorted(c for c, n in out_of_order.items() if n),
        "reply_timeouts": tally.timeouts,
        "latency_ms_p50": pct(latencies, 50), "latency_ms_p95": pct(latencies, 95),
        "latency_ms_max": pct(latencies, 100),
        "turns_per_s": round(len(turns) / wall_s, 2) if wall_s else 0.0, "wall_s": round(wall_s, 1),
        "cpu_count": os.cpu_count(), "note": args.note,
    }


async def drive(args: argparse.Namespace, url: str, serve: subprocess.Popen[bytes], tg: TelegramStandIn,
                slack: SlackStandIn) -> tuple[Tally, float, dict[str, Any]]:
    """Run every conversation at once; returns the tally, wall seconds, and what the kill did."""
    tally, kill = Tally(), dict[str, Any]()
    rng = random.Random(args.seed)
    target = Target(url, TG_SECRET, SLACK_SECRET, args.redeliver_share, args.reply_timeout_s, rng)
    tg_chats = {900000 + c: c for c in range(0, args.conversations, 2)}
    slack_threads = {f"{1700000000 + c}.000000": c for c in range(1, args.conversations, 2)}
    replies = Replies(tally, tg, slack, tg_chats, slack_threads)
    stop = asyncio.Event()
    watcher = asyncio.create_task(replies.run(stop))
    total = args.conversations * args.messages
    kill_task = None if args.no_kill else asyncio.create_task(killer(serve, tally, total, tg, kill))
    started = time.monotonic()
    limits = httpx.Limits(max_connections=args.conversations * 2, max_keepalive_connections=0)
    async with httpx.AsyncClient(timeout=30, limits=limits) as client:
        convs = [asyncio.create_task(conversation(client, target, tally, c, args.messages,
                                                  "telegram" if c % 2 == 0 else "slack",
                                                  str(900000 + c) if c % 2 == 0 else f"C0LOAD{c:03d}"))
                 for c in range(args.conversations)]
        _, pending = await asyncio.wait(convs, timeout=args.max_minutes * 60)
        for task in pending:  # out of time: stop sending; what was sent is still counted
            task.cancel()
        kill["aborted_conversations"] = len(pending)
    last = max(tally.replied_at.values(), default=time.monotonic())
    await asyncio.sleep(args.drain_s)  # late duplicates, if any, would arrive now
    stop.set()
    await watcher
    if kill_task is not None:
        await asyncio.wait_for(kill_task, 300)
    return tally, last - started, kill


def start_database(kind: str, folder: Path) -> tuple[str, Any]:
    if kind == "sqlite":
        return f"sqlite:///{(folder / 'transcripts.db').as_posix()}", None
    from tests.postgres import PostgresServer, server_binaries

    bindir = server_binaries()
    if bindir is None:
        raise SystemExit("PostgreSQL server binaries not found (Debian: apt-get install postgresql)")
    server = PostgresServer(bindir).start()
    return server.url("load"), server


async def run(args: argparse.Namespace) -> dict[str, Any]:
    folder = Path(tempfile.mkdtemp(prefix="groundbot-load-"))
    db_url, pg = start_database(args.db, folder)
    tg = await TelegramStandIn().start()
    slack = SlackStandIn().__enter__()
    port = free_port()
    cfg = write_config(folder, db_url, tg.base_url, slack.api_url, port, args.scopes)
    env = {**os.environ, "GROUNDBOT_TELEGRAM_TOKEN": tg.token, "GROUNDBOT_TELEGRAM_WEBHOOK_SECRET": TG_SECRET,
           "GROUNDBOT_SLACK_BOT_TOKEN": "xoxb-load-bot", "GROUNDBOT_SLACK_SIGNING_SECRET": SLACK_SECRET}
    for name in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy"):
        env.pop(name, None)
    cli = [sys.executable, "-m", "bot.cli.main", "--config", str(cfg)]
    serve = None
    try:
        subprocess.run([*cli, "ingest"], cwd=ROOT, env=env, check=True, capture_output=True, timeout=900)
        log = (folder / "serve.log").open("wb")
        serve = subprocess.Popen([*cli, "serve", "--port", str(port), "--workers", str(args.workers)],
                                 cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        url = f"http://127.0.0.1:{port}"
        await wait_ready(url, tg, args.workers, args.start_timeout_s)
        tally, wall_s, kill = await drive(args, url, serve, tg, slack)
        kill["deliveries_taken_over"] = await taken_over(url)
        serve.send_signal(signal.SIGTERM)
        serve.wait(120)
        kill["replies_found_sent"] = found_sent(folder / "serve.log")
        result = summarize(args, tally, read_turns(db_url), wall_s, kill)
        result["serve_exit_code"] = serve.returncode
        result["delivery_states"] = read_claims(db_url)
        result["turns_by_scope"] = read_scopes(db_url)
        return result
    finally:
        if serve is not None and serve.poll() is None:
            serve.kill()
        await tg.stop()
        slack.__exit__(None, None, None)
        if pg is not None:
            pg.stop()


HEADLINE = ("messages_sent", "messages_recorded_once", "messages_not_recorded", "messages_recorded_twice_or_more",
            "duplicate_replies", "order_violations", "latency_ms_p50", "latency_ms_p95", "turns_per_s")


def headline(result: dict[str, Any]) -> dict[str, float]:
    return {k: result[k] for k in HEADLINE if k in result}


def write_markdown(out_dir: Path) -> Path:
    """One table of every load-*.json run."""
    rows = [json.loads(p.read_text()) for p in sorted(out_dir.glob("load-*.json"))]
    cols = ["note", "db", "workers", "conversations", "messages", "worker_killed", "messages_sent", "turns_recorded",
            "messages_recorded_once", "messages_not_recorded", "messages_recorded_twice_or_more",
            "replies_received", "duplicate_replies", "order_violations", "latency_ms_p50",
            "latency_ms_p95", "turns_per_s", "wall_s"]
    lines = ["# groundbot serve under load (bench/system/load.py)", "",
             "Every figure is measured by `nice -n 10 python -m bench.system.load` (bench/README.md, 'Load on groundbot "
             "serve'), on a 2-core machine shared with other work: latency and throughput say more about "
             "that machine than about groundbot; the counts do not depend on it.", "",
             "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(str(r.get(c, "")) for c in cols) + " |" for r in rows]
    lines += ["", "Kill details: " + "; ".join(f"{r['db']}/{r['workers']}w: {r['kill']}" for r in rows if r.get("kill"))]
    path = out_dir / "load.md"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--db", choices=["postgresql", "sqlite"], default="postgresql")
    p.add_argument("--workers", type=int, default=4)
    p.add_argument("--conversations", type=int, default=50, help="half Telegram chats, half Slack threads")
    p.add_argument("--messages", type=int, default=20, help="messages per conversation")
    p.add_argument("--redeliver-share", type=float, default=0.1, help="share of messages delivered twice / retried")
    p.add_argument("--no-kill", action="store_true", help="do not SIGKILL a worker halfway")
    p.add_argument("--reply-timeout-s", type=float, default=60.0, help="a user waits this long for a reply")
    p.add_argument("--drain-s", type=float, default=5.0, help="wait after the last reply for late duplicates")
    p.add_argument("--start-timeout-s", type=float, default=600.0)
    p.add_argument("--max-minutes", type=float, default=30.0, help="abort the run after this long")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--scopes", action="store_true", help="serve Telegram and Slack from two knowledge scopes")
    p.add_argument("--note", default="", help="free text kept with the results (what code, what else ran)")
    p.add_argument("--out", type=Path, default=None,
                   help="default: bench/results/load-<db>-<N>w.json (load-<db>-<N>w-scopes.json with --scopes)")
    args = p.parse_args(argv)
    if args.workers < 2:
        args.no_kill = True  # one worker has no supervisor to replace it: the baseline runs without the kill
    result = asyncio.run(run(args))
    out = args.out or RESULTS / f"load-{args.db}-{args.workers}w{'-scopes' if args.scopes else ''}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    record(out.stem, headline(result), args.note or f"seed {args.seed}")
    print(json.dumps(result, indent=2))
    print("wrote", out, "and", write_markdown(out.parent))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
