"""Review under `groundbot serve`: a held answer's card reaches the Telegram admins at once, even
when the worker has not received a Telegram update yet (the question came in by another way).
Real uvicorn, python-telegram-bot and the Bot API stand-in."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from dataclasses import replace

import pytest

from bot.app import App
from bot.settings import TelegramSettings
from tests.scenario.test_review_console import HOLD_AT
from tests.scenario.test_review_telegram import RISKY
from tests.scenario.test_serve import API_TOKEN, TG_SECRET, Server, config_with, shared_db, worker  # noqa: F401
from tests.standins.telegram import TelegramStandIn

pytestmark = pytest.mark.filterwarnings("ignore:.*retry_after.*:telegram.warnings.PTBDeprecationWarning")
ADMIN = 111


@pytest.mark.slow
async def test_a_held_answer_card_reaches_telegram_admins_before_any_update(make_app: Callable[..., App],
                                                                             shared_db: str) -> None:  # noqa: F811
    standin = await TelegramStandIn().start()
    try:
        env = {"GROUNDBOT_TELEGRAM_TOKEN": standin.token, "GROUNDBOT_TELEGRAM_WEBHOOK_SECRET": TG_SECRET,
               "GROUNDBOT_API_TOKEN": API_TOKEN}
        base = config_with(env, telegram=replace(TelegramSettings(), base_url=standin.base_url),
                           admins={"telegram": (str(ADMIN),)})
        review = replace(base.core.review, template_risk=HOLD_AT, hold_risk=HOLD_AT, retry_seconds=0.2)
        cfg = base.changed(review=review)
        server = Server(worker(make_app, cfg, shared_db))
        try:
            await asyncio.to_thread(server.wait_ready)
            held = (await asyncio.to_thread(server.ask, RISKY, "widget-9")).json()
            assert held["state"] == "pending_review" and held["route"] == "hold"
            [card] = await standin.wait_sent(1, chat_id=ADMIN)  # no Telegram update has reached this worker
            assert re.search(r"Held for review: #\d+ \(api", card.params["text"]) and RISKY in card.params["text"]
            assert [b["callback_data"] for row in card.params["reply_markup"]["inline_keyboard"] for b in row][0] \
                .startswith("r:approve:")
            app = server.service.app
            item = app.desk.queue.entries()[0].id
            done = app.review("telegram", str(ADMIN), "approve", item)  # an /api/ask caller is not written to later
            assert done.ok and "api questions cannot be answered later" in done.text
            assert app.courier.outbox.pending_count() == 0 and app.stats()["outbox_pending"] == 0
        finally:
            await asyncio.to_thread(server.stop)
    finally:
        await standin.stop()
