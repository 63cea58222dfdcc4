"""Every documented metric of `groundbot serve` moves when its event happens, whichever way it
arrives: `/api/ask`, Slack's Events API, the Telegram webhook and (through the same App hooks)
the console. One real worker on uvicorn, real slack-bolt and python-telegram-bot against their
stand-ins; /metrics is read as Prometheus text and parsed with prometheus_client's parser."""

from __future__ import annotations

import asyncio
import io
from collections.abc import Callable
from dataclasses import replace
from types import SimpleNamespace
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from adapters.console import ConsoleChat
from adapters.slack.rendering import FEEDBACK_DOWN, FEEDBACK_UP
from bot.app import App
from bot.server.metrics import Metrics
from bot.server.shared import serve_hooks
from bot.settings import SlackSettings, TelegramSettings
from storage.records.leases import ConversationLeases
from tests.scenario.test_serve import (  # noqa: F401
    ANSWERED,
    API_TOKEN,
    SLACK_SECRET,
    TG_SECRET,
    Server,
    config_with,
    shared_db,  # noqa: F401
    worker,
)
from tests.scenario.test_slack import ADMIN, USER, Slack
from tests.standins.slack import SlackStandIn
from tests.standins.telegram import TelegramStandIn
from tests.waits import WAIT_S, wait_until

TG_ADMIN, TG_USER = 900, 777
pytestmark = pytest.mark.filterwarnings("ignore:.*retry_after.*:telegram.warnings.PTBDeprecationWarning")


def sample(text: str, name: str, **labels: str) -> float:
    """The value of one sample of the exposition (0 when it is not there yet)."""
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == name and all(s.labels.get(k) == v for k, v in labels.items()):
                return float(s.value)
    return 0.0


def until(read: Callable[[], float], want: float, what: str) -> None:
    """Until the metric `read` shows `want`; the failure says what it showed instead."""
    try:
        wait_until(lambda: read() == want, what=what)
    except AssertionError:
        raise AssertionError(f"{what}: {read()}, expected {want}") from None


@pytest.mark.slow
async def test_each_metric_moves_once_per_event_on_every_path(make_app: Callable[..., App],
                                                              shared_db: str, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    for name in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy"):
        monkeypatch.delenv(name, raising=False)
    tg = await TelegramStandIn().start()
    try:
        with SlackStandIn() as api:
            env = {"GROUNDBOT_SLACK_BOT_TOKEN": "xoxb-standin-bot", "GROUNDBOT_SLACK_SIGNING_SECRET": SLACK_SECRET,
                   "GROUNDBOT_TELEGRAM_TOKEN": tg.token, "GROUNDBOT_TELEGRAM_WEBHOOK_SECRET": TG_SECRET,
                   "GROUNDBOT_API_TOKEN": API_TOKEN}
            cfg = config_with(env, slack=replace(SlackSettings(), api_base_url=api.api_url),
                              telegram=replace(TelegramSettings(), base_url=tg.base_url),
                              admins={"slack": (ADMIN,), "telegram": (str(TG_ADMIN),)})
            server = Server(worker(make_app, cfg, shared_db))
            try:
                await asyncio.to_thread(server.wait_ready)
                await asyncio.to_thread(_http_and_slack, server, api)
                await _telegram(server, tg)
            finally:
                await asyncio.to_thread(server.stop)
    finally:
        await tg.stop()


def _http_and_slack(server: Server, api: SlackStandIn) -> None:
    def metric(name: str, **labels: str) -> float:
        return sample(server.get("/metrics").text, name, **labels)

    answered = {"outcome": "answered", "reason": ""}
    assert server.ask(ANSWERED).status_code == 200
    assert metric("groundbot_turns_total", **answered) == 1
    assert metric("groundbot_stage_seconds_count", stage="retrieve") == 1

    slack = Slack("http", api, server.service.app, server.service.slack, SimpleNamespace(port=server.port))
    slack.mention(ANSWERED, ts="1900.000100")
    (reply,) = slack.replies(1)
    until(lambda: metric("groundbot_turns_total", **answered), 2, "turns after a Slack question")
    slack.click(reply, FEEDBACK_DOWN, user="UBOB0001")
    (modal,) = api.wait_for("views.open")
    until(lambda: metric("groundbot_feedback_total", value="down"), 1, "a thumbs-down")
    slack.submit(modal, {"reason": "wrong", "comment": ""}, user="UBOB0001")
    api.wait_for("chat.postMessage", 2)
    slack.click(reply, FEEDBACK_UP, user=USER)
    until(lambda: metric("groundbot_feedback_total", value="up"), 1, "a thumbs-up")
    assert metric("groundbot_feedback_total", value="down") == 1  # its reason is the same vote, counted once
    assert metric("groundbot_review_queue_depth") == 1

    slack.command("/groundbot-reingest", user=USER)  # not an admin: nothing runs
    until(lambda: metric("groundbot_ingest_runs_total", result="refused"), 1, "a refused re-ingest")
    slack.command("/groundbot-reingest", user=ADMIN)
    until(lambda: metric("groundbot_ingest_runs_total", result="ok"), 1, "a re-ingest from Slack")


async def _telegram(server: Server, tg: TelegramStandIn) -> None:
    async def until_metric(name: str, want: float, what: str, **labels: str) -> None:
        await asyncio.to_thread(until, lambda: sample(server.get("/metrics").text, name, **labels), want, what)

    async with httpx.AsyncClient(timeout=WAIT_S) as client:
        async def post(update_id: int, update: dict[str, Any]) -> None:
            r = await client.post(server.url + "/telegram", json={"update_id": update_id, **update},
                                  headers={"X-Telegram-Bot-Api-Secret-Token": TG_SECRET})
            assert r.status_code == 200

        await post(7001, tg.message_update(ANSWERED, chat_id=601, user_id=TG_USER))
        [reply] = await tg.wait_sent(1, chat_id=601)
        await until_metric("groundbot_turns_total", 3, "turns after a Telegram question", outcome="answered", reason="")
        turn = server.service.app.store.turns()[-1].id
        await post(7002, {"callback_query": {"id": "cq-metrics", "from": tg.user(TG_USER), "chat_instance": "ci-1",
                                             "message": reply.result, "data": f"f:{turn}:1"}})
        await until_metric("groundbot_feedback_total", 2, "a thumbs-up on Telegram", value="up")
        await post(7003, tg.message_update("/reingest", chat_id=TG_ADMIN, user_id=TG_ADMIN))
        await until_metric("groundbot_ingest_runs_total", 2, "a re-ingest from Telegram", result="ok")


@pytest.mark.slow
def test_the_console_tells_the_same_hooks(make_app: Callable[..., App]) -> None:
    """The console is not served, but its turns, votes and re-ingests reach the App's hooks the
    same way: counted when the hooks of `groundbot serve` are registered on its App."""
    app = make_app()
    metrics = Metrics()
    serve_hooks(app.hooks, ConversationLeases(app.store.engine), metrics)
    out = io.StringIO()
    lines = f"{ANSWERED}\n/bad\n/bad wrong the hours changed\n/reingest\n/quit\n"
    ConsoleChat(app, stdin=io.StringIO(lines), stdout=out).run()
    text = metrics.exposition().decode()
    assert sample(text, "groundbot_turns_total", outcome="answered", reason="") == 1, out.getvalue()
    assert sample(text, "groundbot_feedback_total", value="down") == 1
    assert sample(text, "groundbot_ingest_runs_total", result="ok") == 1


@pytest.mark.slow
def test_an_unreachable_llm_is_counted_as_an_llm_error(make_app: Callable[..., App], shared_db: str,  # noqa: F811
                                                       free_port: int) -> None:
    cfg = config_with({"GROUNDBOT_API_TOKEN": API_TOKEN})
    cfg = cfg.changed(generator__kind="openai", openai=replace(cfg.openai, base_url=f"http://127.0.0.1:{free_port}/v1",
                                                          timeout_s=1.0, max_retries=0))
    server = Server(worker(make_app, cfg, shared_db))
    try:
        server.wait_ready()
        assert server.ask(ANSWERED).json()["refusal_reason"] == "LLM_UNAVAILABLE"
        text = server.get("/metrics").text
        assert sample(text, "groundbot_llm_errors_total", kind="error") == 1
        assert sample(text, "groundbot_turns_total", outcome="refused", reason="LLM_UNAVAILABLE") == 1
    finally:
        server.stop()
