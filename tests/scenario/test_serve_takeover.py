"""A worker SIGKILLed after acknowledging a message, before answering it: another worker answers
it, once. Two real `groundbot serve` processes on one database (SQLite file, then the real
PostgreSQL server), real python-telegram-bot and slack-bolt against the local stand-ins.

Telegram forgets an update once the webhook said 200, and Slack an event once it was acked
within 3 s, so nothing re-delivers what the killed worker acknowledged: before delivery claims,
these messages were lost (bench/results/load.md). Worker A is held between the two moments
realistically: an earlier turn of the same conversation holds the conversation's lease.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import create_engine, text

from tests.ports import free_port
from tests.processes import serve_subprocess
from tests.scenario.test_serve import ANSWERED, SLACK_SECRET, TG_SECRET, _slack_event
from tests.scenario.test_serve_workers import START_S
from tests.scenario.test_slack import sign
from tests.standins.slack import SlackStandIn
from tests.standins.telegram import TelegramStandIn
from tests.waits import wait_until

CHAT = 700
SLACK_TS = "1700000000.000700"
pytestmark = [pytest.mark.processes, pytest.mark.filterwarnings("ignore:.*retry_after.*:telegram.warnings.PTBDeprecationWarning")]


@contextmanager
def serve_one(tmp: Path, name: str, docs_index: Path, db_url: str, tg: TelegramStandIn,
              slack: SlackStandIn) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """`groundbot serve --workers 1` with the Telegram webhook and Slack configured."""
    data = tmp / name
    shutil.copytree(docs_index, data / "index")
    port = free_port()
    cfg = tmp / f"{name}.toml"
    cfg.write_text(f'[paths]\ndata_dir = "{data.as_posix()}"\n[storage]\ndatabase_url = "{db_url}"\n'
                   f'[telegram]\nbase_url = "{tg.base_url}"\nwebhook_url = "http://127.0.0.1:{port}/telegram"\n'
                   f'[slack]\napi_base_url = "{slack.api_url}"\n'
                   "[serve]\nconversation_lease_s = 5.0\ndelivery_stale_s = 3.0\n", encoding="utf-8")
    env = {**os.environ, "GROUNDBOT_TELEGRAM_TOKEN": tg.token, "GROUNDBOT_TELEGRAM_WEBHOOK_SECRET": TG_SECRET,
           "GROUNDBOT_SLACK_BOT_TOKEN": "xoxb-standin-bot", "GROUNDBOT_SLACK_SIGNING_SECRET": SLACK_SECRET}
    for proxy in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy"):
        env.pop(proxy, None)
    with serve_subprocess(cfg, port, 1, env, tmp / f"{name}.log") as proc:
        url = f"http://127.0.0.1:{port}"
        wait_until(lambda: _ready(url, proc), START_S, interval=0.2, what=f"worker {name} ready")
        yield url, proc


def _ready(url: str, proc: subprocess.Popen[bytes]) -> bool:
    assert proc.poll() is None, f"groundbot serve exited with {proc.returncode}"
    try:
        return httpx.get(url + "/readyz", timeout=5).status_code == 200
    except httpx.TransportError:
        return False


def _sql(db_url: str, statement: str, **params: Any) -> list[Any]:
    engine = create_engine(db_url)
    try:
        with engine.begin() as conn:
            result = conn.execute(text(statement), params)
            return list(result.all()) if result.returns_rows else []
    finally:
        engine.dispose()


def _update() -> dict[str, Any]:
    message = {"message_id": 1, "date": int(time.time()), "text": ANSWERED,
               "chat": {"id": CHAT, "type": "private", "first_name": "Tester"},
               "from": {"id": CHAT, "is_bot": False, "first_name": "Tester"}}
    return {"update_id": 70001, "message": message}


async def test_a_worker_killed_between_acknowledging_and_answering_leaves_its_messages_to_another(
        tmp_path: Path, docs_index: Path, database_url: str) -> None:
    tg = await TelegramStandIn().start()
    try:
        with SlackStandIn() as slack, ExitStack() as stack:
            (a_url, a), (b_url, _) = await asyncio.gather(*(asyncio.to_thread(
                stack.enter_context, serve_one(tmp_path, n, docs_index, database_url, tg, slack)) for n in "ab"))
            # an earlier turn of both conversations is running somewhere: A will wait for it
            until = datetime.now(UTC) + timedelta(hours=1)
            for conv in (f"telegram:{CHAT}:", f"slack:C0GENERAL:{SLACK_TS}"):
                _sql(database_url, "INSERT INTO conversation_lease (key, holder, expires_at) VALUES (:k, 'test', :u)",
                     k=conv, u=until)
            update, event = _update(), _slack_event(ANSWERED, SLACK_TS, "Ev0KILLED1")
            async with httpx.AsyncClient(timeout=30) as client:
                r = await client.post(a_url + "/telegram", json=update, headers={"X-Telegram-Bot-Api-Secret-Token": TG_SECRET})
                assert r.status_code == 200  # Telegram will not send this update again
                r = await client.post(a_url + "/slack/events", content=event,
                                      headers={"Content-Type": "application/json", **sign(event, secret=SLACK_SECRET)})
                assert r.status_code == 200  # nor Slack this event
                await asyncio.sleep(1.0)
                os.kill(a.pid, signal.SIGKILL)
                await asyncio.to_thread(a.wait, 30)
                _sql(database_url, "DELETE FROM conversation_lease WHERE holder = 'test'")  # the earlier turns end
                # Telegram delivers the update once more, to B: acknowledged, not answered twice
                r = await client.post(b_url + "/telegram", json=update, headers={"X-Telegram-Bot-Api-Secret-Token": TG_SECRET})
                assert r.status_code == 200
            await tg.wait_sent(1, chat_id=CHAT, timeout=START_S)
            await asyncio.to_thread(slack.wait_until, lambda: slack.requests("chat.postMessage"), START_S, "Slack answer")
            states = lambda: {str(k): str(s) for k, s in _sql(database_url, "SELECT key, state FROM delivery")}  # noqa: E731
            await asyncio.to_thread(wait_until, lambda: set(states().values()) == {"done"}, START_S, interval=0.2, what="deliveries done")
            await asyncio.sleep(4.0)  # a second answer, if any, would come now
            assert len(tg.sent(CHAT)) == 1
            posted = slack.requests("chat.postMessage")
            assert len(posted) == 1 and posted[0].args["thread_ts"] == SLACK_TS
            turns = _sql(database_url, "SELECT platform, question FROM turn ORDER BY id")
            assert sorted(p for p, _ in turns) == ["slack", "telegram"]  # each message recorded exactly once
            assert all(q == ANSWERED for _, q in turns)
            assert f"telegram:{tg.token.split(':')[0]}:update:70001" in states()
            metrics = httpx.get(b_url + "/metrics", timeout=30).text
            assert 'groundbot_deliveries_taken_over_total{platform="telegram"} 1.0' in metrics
            assert 'groundbot_deliveries_taken_over_total{platform="slack"} 1.0' in metrics
    finally:
        await tg.stop()
