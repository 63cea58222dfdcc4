"""The real python-telegram-bot Application, wired by bot/cli/run_telegram.py, against a local
Bot API stand-in on 127.0.0.1: what users see is asserted at the stand-in (request bodies,
buttons, chat ids), what was decided in the transcript store."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import threading
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml

from adapters.telegram import TelegramBot, WebhookOptions
from bot.app import App
from bot.cli.main import main as cli_main
from bot.platforms import build_bot, webhook_options
from bot.settings import TelegramSettings
from core import reasons
from core.catalogue import explain
from core.render import display_answer
from tests.standins.telegram import Call, TelegramStandIn
from tests.waits import WAIT_S

TOKEN_ENV = "GROUNDBOT_TELEGRAM_TOKEN"
SECRET_ENV = "GROUNDBOT_TELEGRAM_WEBHOOK_SECRET"
SECRET = "s3cret-token_1"
ADMIN, GUEST = 111, 222
ANSWERED = "How do I re-ingest documents?"
REFUSED = "Can I store transcripts in MySQL?"  # refused, with "How do I use PostgreSQL for transcripts?" suggested
ROOT = Path(__file__).resolve().parents[2]

# python-telegram-bot itself warns about its int -> timedelta migration when it builds a RetryAfter
pytestmark = pytest.mark.filterwarnings("ignore:.*retry_after.*:telegram.warnings.PTBDeprecationWarning")


@pytest.fixture
async def standin() -> AsyncIterator[TelegramStandIn]:
    server = await TelegramStandIn().start()
    yield server
    await server.stop()


@pytest.fixture
def tg_app(make_app: Callable[..., App], standin: TelegramStandIn) -> Callable[..., App]:
    """A real App whose config points the bot at the stand-in; token and secret come from `environ`."""

    def factory(config: Any = None, **fields: Any) -> App:
        if config is not None:
            return make_app(config=config, **fields)
        telegram = replace(TelegramSettings(), base_url=standin.base_url, webhook_url="https://bot.example.org/tg/hook",
                           **fields.pop("telegram", {}))
        return make_app(environ={TOKEN_ENV: standin.token, SECRET_ENV: SECRET}, telegram=telegram,
                        admins={"telegram": (str(ADMIN),)}, **fields)

    return factory


@asynccontextmanager
async def running(app: App, webhook: WebhookOptions | None = None, backend: Any = None) -> AsyncIterator[TelegramBot]:
    bot = build_bot(app.config, backend or app)
    await bot.start(webhook)
    try:
        yield bot
    finally:
        await bot.stop()


def buttons(call: Call) -> list[tuple[str, str]]:
    markup = call.params.get("reply_markup") or {"inline_keyboard": []}
    return [(b["text"], b["callback_data"]) for row in markup["inline_keyboard"] for b in row]


def turn_keys(app: App) -> list[tuple[str, str, str, str]]:
    return [(t.platform, t.chat_id, t.thread_id, t.user_id) for t in app.store.turns()]


async def test_answer_with_sources_typing_and_feedback(tg_app: Callable[..., App], standin: TelegramStandIn) -> None:
    app = tg_app()
    async with running(app):
        asked = standin.send_text(ANSWERED, chat_id=501, user_id=777)
        [reply] = await standin.wait_sent(1)
        assert reply.params["chat_id"] == 501
        assert reply.params["text"].startswith(display_answer(app.store.turns()[0].answer))
        assert "\n\nSources:\n[1] " in reply.params["text"]
        assert "parse_mode" not in reply.params  # plain text: nothing to escape, nothing to break
        # a private chat shows a draft naming the step while groundbot works, never the unchecked answer
        drafts = standin.of("sendMessageDraft")
        assert drafts and drafts[0].at <= reply.at and standin.of("sendChatAction") == []
        assert int(drafts[0].params["draft_id"]) == asked["message"]["message_id"]
        assert (drafts[0].params["chat_id"], drafts[0].params["text"]) == (501, "Searching the knowledge base…")
        [turn] = app.store.turns()
        assert turn.id is not None and not turn.refused and (turn.platform, turn.chat_id, turn.user_id) == ("telegram", "501", "777")
        assert buttons(reply) == [("👍", f"f:{turn.id}:1"), ("👎", f"f:{turn.id}:-1")]

        standin.press(reply.result, f"f:{turn.id}:1", user_id=777)
        standin.press(reply.result, f"f:{turn.id}:-1", user_id=778)
        acks = await standin.wait_for(lambda: len(a := standin.of("answerCallbackQuery")) == 2 and a)
        assert [a.params.get("text") for a in acks].count("Thanks for the feedback.") == 1
        why = await standin.wait_for(lambda: [c for c in standin.sent(501) if "What was wrong?" in c.params["text"]])
        assert buttons(why[0]) == [("Wrong answer", f"fr:{turn.id}:wrong"),
                                   ("Did not answer my question", f"fr:{turn.id}:unanswered"),
                                   ("Something else", f"fr:{turn.id}:other")]
        assert app.desk.queue.entries() == []  # a thumbs-down alone is a vote, not yet a complaint
        standin.press(why[0].result, f"fr:{turn.id}:wrong", user_id=778)
        ack = await standin.wait_for(lambda: len(a := standin.of("answerCallbackQuery")) == 3 and a[-1])
        assert ack.params["text"] == "Thanks, an admin will look at it."
    votes = {(f.user_id, f.value, f.reason) for f in app.store.feedback_for(turn.id)}
    assert votes == {("777", 1, ""), ("778", -1, "wrong")}
    [item] = app.desk.queue.entries()
    assert (item.turn_id, item.origin, item.reason) == (turn.id, "feedback", "wrong")
    assert standin.of("deleteWebhook"), "polling must clear any webhook first"
    assert len(app.store.turns()) == 1  # button presses are not questions


async def test_refusal_offers_suggestion_buttons_and_a_press_asks_it(tg_app: Callable[..., App],
                                                                     standin: TelegramStandIn) -> None:
    app = tg_app()
    async with running(app):
        standin.send_text(REFUSED, chat_id=502, user_id=777)
        [refusal] = await standin.wait_sent(1)
        text = refusal.params["text"]
        assert text.startswith(app.config.core.refusal.messages["en"]) and "Reason: " in text
        first = app.store.turns()[0]
        assert first.refused and f"[{first.refusal_reason}]" in text
        *offered, flag = buttons(refusal)
        assert flag == ("This should be answerable", f"fr:{first.id}:should_answer")
        assert offered and offered[0][0] == "How do I use PostgreSQL for transcripts?"
        for label, data in offered:
            kind, _, sid = data.partition(":")
            assert kind == "s" and len(data.encode()) <= 64 and label not in data
            assert app.store.suggestion_text(int(sid)) == label
            assert label not in text  # the suggestions are buttons, not repeated in the text

        standin.press(refusal.result, offered[0][1], user_id=777)
        _, answer = await standin.wait_sent(2)
        assert standin.of("answerCallbackQuery")[0].params["callback_query_id"].startswith("cq")
        assert answer.params["chat_id"] == 502
        assert answer.params["text"].startswith("› How do I use PostgreSQL for transcripts?\n\n")
        assert "Sources:" in answer.params["text"] and buttons(answer)[0][1].startswith("f:")
    turns = app.store.turns()
    assert [t.question for t in turns] == [REFUSED, "How do I use PostgreSQL for transcripts?"]
    assert not turns[1].refused
    assert turn_keys(app) == [("telegram", "502", "", "777")] * 2  # the same conversation continues


@pytest.mark.slow
async def test_reingest_runs_for_admins_only(tg_app: Callable[..., App], standin: TelegramStandIn,
                                             tmp_path: Path) -> None:
    app = tg_app(paths__reingest_roots=(str(tmp_path),))
    kb = tmp_path / "extra"
    kb.mkdir()
    (kb / "lighthouse.md").write_text("# Lighthouses\n\n## What does a keeper log?\n\n"
                                      "Keepers log the lamp hours and the weather every night.\n")
    chunks = app.index.count()
    async with running(app):
        standin.send_text(f"/reingest {kb}", chat_id=601, user_id=GUEST)
        [denied] = await standin.wait_sent(1, chat_id=601)
        assert denied.params["text"] == "Sorry, only admins can re-ingest the knowledge base."
        standin.send_text("/stats", chat_id=601, user_id=GUEST)
        await standin.wait_sent(2, chat_id=601)
        assert app.index.count() == chunks and not standin.of("editMessageText")

        standin.send_text(f"/reingest {kb}", chat_id=602, user_id=ADMIN)
        edits = await standin.wait_for(lambda: [e for e in standin.of("editMessageText")
                                                if e.params["text"].startswith("Re-ingest done")])
        [started] = standin.sent(602)
        assert started.params["text"] == "Re-ingesting the knowledge base…"
        assert edits[-1].params["message_id"] == started.result["message_id"]
        assert edits[-1].params["text"].startswith("Re-ingest done: added 1, updated 0, removed 0")
        assert app.index.count() > chunks

        standin.send_text("/stats", chat_id=602, user_id=ADMIN)
        stats = (await standin.wait_sent(2, chat_id=602))[-1].params["text"]
        assert stats.startswith("Turns: 0 (answered 0, refused 0)") and "Latency: p50" in stats
        assert "Review queue: 0 waiting" in stats
        standin.send_text("/whoami", chat_id=602, user_id=ADMIN)
        whoami = (await standin.wait_sent(3, chat_id=602))[-1].params["text"]
        assert whoami == f"Your Telegram user id is {ADMIN} (an admin of this bot)."
    assert "only admins can see stats" in standin.sent(601)[1].params["text"]
    assert app.store.turns() == []  # admin commands are not questions


async def test_long_answer_is_split_on_paragraphs(tg_app: Callable[..., App], standin: TelegramStandIn,
                                                  tmp_path: Path) -> None:
    app = tg_app()
    paragraph = " ".join(f"Keepers log the lamp hours for tower {i} every night." for i in range(18))
    answer = "\n\n".join([paragraph] * 7)
    assert len(answer) > 5000
    faq = tmp_path / "kb" / "lighthouse.yaml"
    faq.parent.mkdir()
    faq.write_text(yaml.safe_dump({"faq": [{"question": "What do lighthouse keepers write in the lamp log?",
                                            "answer": answer, "url": "https://example.org/lamp-log"}]}))
    app.ingest([faq.parent])
    async with running(app):
        standin.send_text("What do lighthouse keepers write in the lamp log?", chat_id=503)
        await standin.wait_for(lambda: standin.sent() and buttons(standin.sent()[-1]))
    pieces = [c.params["text"] for c in standin.sent()]
    assert len(pieces) >= 2 and all(len(p) <= 4096 for p in pieces)
    assert all(p.endswith(("night.", "night. [C1]")) for p in pieces[:-1])  # cut between paragraphs only
    assert "\n\n".join(pieces).startswith(answer)
    assert "(https://example.org/lamp-log)" in pieces[-1]
    assert [bool(buttons(c)) for c in standin.sent()] == [False] * (len(pieces) - 1) + [True]
    assert len(app.store.turns()) == 1


async def test_flood_control_429_is_retried(tg_app: Callable[..., App], standin: TelegramStandIn) -> None:
    app = tg_app()
    async with running(app):
        standin.fail_next("sendMessage", retry_after=1)
        standin.send_text(ANSWERED, chat_id=504)
        await standin.wait_sent(1)
    tries = standin.of("sendMessage", ok_only=False)
    assert [c.status for c in tries] == [429, 200]
    assert tries[0].params["text"] == tries[1].params["text"]
    assert tries[1].at - tries[0].at >= 0.95
    assert turn_keys(app) == [("telegram", "504", "", "777")]


async def test_webhook_rejects_requests_without_the_secret(tg_app: Callable[..., App],
                                                           standin: TelegramStandIn, free_port: int) -> None:
    app = tg_app()
    hook = webhook_options(app.config, port=free_port, listen="127.0.0.1")
    url = f"http://127.0.0.1:{hook.port}/tg/hook"
    async with running(app, hook), aiohttp.ClientSession() as http:
        [registered] = standin.of("setWebhook")
        assert registered.params["url"] == "https://bot.example.org/tg/hook"
        assert registered.params["secret_token"] == SECRET
        statuses = []
        for chat_id, headers in ((701, {}), (702, {"X-Telegram-Bot-Api-Secret-Token": "wrong"}),
                                 (703, {"X-Telegram-Bot-Api-Secret-Token": SECRET})):
            update = {"update_id": chat_id, **standin.message_update(ANSWERED, chat_id=chat_id)}
            async with http.post(url, json=update, headers=headers) as resp:
                statuses.append(resp.status)
        assert statuses == [403, 403, 200]
        await standin.wait_sent(1)
    assert [c.params["chat_id"] for c in standin.sent()] == [703]
    assert turn_keys(app) == [("telegram", "703", "", "777")]
    assert not standin.of("getUpdates")


async def test_group_answers_mentions_replies_and_ask_only(tg_app: Callable[..., App],
                                                           standin: TelegramStandIn) -> None:
    app = tg_app()
    group = -1001
    mention = f"@{standin.username}"
    async with running(app):
        standin.send_text(ANSWERED, chat_id=group, chat_type="supergroup")  # chatter: not for the bot
        asked = standin.send_text(f"{mention} {ANSWERED}", chat_id=group, chat_type="supergroup",
                                  entities=[{"type": "mention", "offset": 0, "length": len(mention)}])
        [first] = await standin.wait_sent(1)
        assert first.params["reply_parameters"]["message_id"] == asked["message"]["message_id"]
        bot_msg = first.result
        standin.send_text("Which embedder for Persian?", chat_id=group, chat_type="supergroup", reply_to=bot_msg)
        await standin.wait_sent(2)
        standin.send_text("/ask Who can run admin commands?", chat_id=group, chat_type="supergroup")
        await standin.wait_sent(3)
        human = standin.message_update("my db is slow", chat_id=group, chat_type="supergroup", user_id=900)["message"]
        standin.send_text(f"{mention} Can I use PostgreSQL?", chat_id=group, chat_type="supergroup", reply_to=human,
                          entities=[{"type": "mention", "offset": 0, "length": len(mention)}])
        await standin.wait_sent(4)
    turns = app.store.turns()
    assert [t.question for t in turns] == [ANSWERED, "Which embedder for Persian?", "Who can run admin commands?",
                                           "my db is slow\nCan I use PostgreSQL?"]  # the replied-to question first
    assert [t.thread_id for t in turns] == ["", "", "", f"r{human['message_id']}"]
    assert {(t.platform, t.chat_id, t.user_id) for t in turns} == {("telegram", str(group), "777")}
    assert all(c.params["chat_id"] == group for c in standin.sent())


async def test_failures_reach_the_user_as_refusals(tg_app: Callable[..., App], standin: TelegramStandIn,
                                                   free_port: int) -> None:
    base = tg_app()
    dead = f"http://127.0.0.1:{free_port}/v1"  # nothing listens here: the LLM is down
    app = tg_app(config=base.config.changed(generator__kind="openai",
                                openai=replace(base.config.openai, base_url=dead, timeout_s=1.0, max_retries=0)))

    class Crashing:
        """The real App, except that one question blows up inside the backend."""

        def __getattr__(self, name: str) -> Any:
            return getattr(app, name)

        def ask(self, msg: Any) -> Any:
            if msg.text == "crash":
                raise RuntimeError("database is locked")
            return app.ask(msg)

    async with running(app, backend=Crashing()):
        standin.send_text(ANSWERED, chat_id=505)
        [down] = await standin.wait_sent(1)
        standin.send_text("crash", chat_id=505)
        _, crashed = await standin.wait_sent(2)
        standin.send_text(REFUSED, chat_id=505)  # and the bot keeps working
        await standin.wait_sent(3)
    assert down.params["text"].startswith(app.config.core.refusal.messages["en"])
    assert f"[{reasons.LLM_UNAVAILABLE}]" in down.params["text"]
    assert crashed.params["text"].startswith(app.config.core.refusal.messages["en"])
    assert f"Reason: {explain(reasons.INTERNAL_ERROR, 'en')} [{reasons.INTERNAL_ERROR}]" in crashed.params["text"]
    assert "RuntimeError" not in crashed.params["text"]  # the error is logged, not shown
    turns = app.store.turns()
    assert turns[0].refused and turns[0].refusal_reason == reasons.LLM_UNAVAILABLE and turns[0].llm_called
    assert turn_keys(app)[0] == ("telegram", "505", "", "777")


async def test_rate_limit_and_size_cap_get_clear_replies(tg_app: Callable[..., App],
                                                         standin: TelegramStandIn) -> None:
    app = tg_app(telegram={"rate_limit_per_minute": 2, "max_message_chars": 60})
    async with running(app):
        standin.send_text("x" * 61, chat_id=506, user_id=31)
        [too_long] = await standin.wait_sent(1)
        for _ in range(3):
            standin.send_text(ANSWERED, chat_id=507, user_id=32)
        await standin.wait_sent(3, chat_id=507)
    assert too_long.params["text"].startswith("Your message is 61 characters long; I can take questions of up to 60")
    replies = [c.params["text"] for c in standin.sent(507)]
    assert sum(r.startswith("You are sending questions faster") for r in replies) == 1
    assert turn_keys(app) == [("telegram", "507", "", "32")] * 2


def test_cli_needs_the_token_and_a_webhook_secret(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    monkeypatch.delenv(SECRET_ENV, raising=False)
    args = ["--config", str(ROOT / "config.toml"), "--data-dir", str(tmp_path), "telegram"]
    assert cli_main(args) == 2
    assert TOKEN_ENV in capsys.readouterr().err
    monkeypatch.setenv(TOKEN_ENV, "123:abc")
    assert cli_main([*args, "--webhook"]) == 2
    assert SECRET_ENV in capsys.readouterr().err


async def test_one_chat_is_answered_in_order_while_others_proceed(tg_app: Callable[..., App],
                                                                  standin: TelegramStandIn) -> None:
    app = tg_app()
    questions = [ANSWERED, REFUSED, "Which embedder for Persian?"]

    class SlowFirst:
        """The real App, but the first question takes a while (a cold cache, a slow LLM)."""

        def __getattr__(self, name: str) -> Any:
            return getattr(app, name)

        def ask(self, msg: Any) -> Any:
            if msg.text == questions[0]:
                time.sleep(0.3)
            return app.ask(msg)

    async with running(app, backend=SlowFirst()):
        for q in questions:
            standin.send_text(q, chat_id=508)
        standin.send_text(ANSWERED, chat_id=509)
        await standin.wait_sent(3, chat_id=508)
        await standin.wait_sent(1, chat_id=509)
    assert [t.question for t in app.store.turns() if t.chat_id == "508"] == questions
    replies = standin.sent(508)
    turns = [t for t in app.store.turns() if t.chat_id == "508"]
    for reply, turn in zip(replies, turns, strict=True):
        text = reply.params["text"]
        body = text.split("\n\n", 1)[1] if text.startswith("(Following on from:") else text  # how a follow-up was read
        assert body.startswith(display_answer(turn.answer) if not turn.refused else app.config.core.refusal.messages["en"])


@pytest.mark.slow
def test_groundbot_telegram_command_polls_answers_and_stops(tmp_path: Path, docs_index: Path,
                                                           monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """`groundbot telegram` end to end: config file + environment -> App -> polling -> reply -> Ctrl-C."""
    loop = asyncio.new_event_loop()
    threading.Thread(target=loop.run_forever, daemon=True).start()
    standin = asyncio.run_coroutine_threadsafe(TelegramStandIn().start(), loop).result(WAIT_S)
    data = tmp_path / "data"
    shutil.copytree(docs_index, data / "index")
    config = tmp_path / "config.toml"
    config.write_text(f'[paths]\ndata_dir = "{data.as_posix()}"\n\n[telegram]\nbase_url = "{standin.base_url}"\n')
    monkeypatch.setenv(TOKEN_ENV, standin.token)
    loop.call_soon_threadsafe(lambda: standin.send_text(ANSWERED, chat_id=510))

    def interrupt_after_reply() -> None:
        try:
            asyncio.run_coroutine_threadsafe(standin.wait_sent(1, chat_id=510), loop).result()
        except AssertionError:
            pass  # no reply within WAIT_S: the assertions below fail
        finally:
            os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C either way

    watcher = threading.Thread(target=interrupt_after_reply, daemon=True)
    watcher.start()
    try:
        assert cli_main(["--config", str(config), "telegram"]) == 0
    finally:
        watcher.join(WAIT_S)
        asyncio.run_coroutine_threadsafe(standin.stop(), loop).result(WAIT_S)
        loop.call_soon_threadsafe(loop.stop)
    assert f"as @{standin.username} (long polling)" in capsys.readouterr().err
    [reply] = standin.sent(510)
    assert "Sources:" in reply.params["text"]
    assert standin.calls[0].method == "getMe" and standin.of("deleteWebhook")
    from storage.records.transcripts import SqlTranscriptStore

    turns = SqlTranscriptStore(f"sqlite:///{(data / 'transcripts.db').as_posix()}").turns()
    assert [(t.platform, t.chat_id, t.user_id, t.question) for t in turns] == [("telegram", "510", "777", ANSWERED)]


async def test_group_answers_questions_without_a_mention_when_set(tg_app: Callable[..., App],
                                                                  standin: TelegramStandIn) -> None:
    """`[telegram] answer_in_groups = "questions"`: a top-level group message with a question mark is
    answered as a reply; a refusal is recorded and nothing is sent; other messages, replies to
    people and private chats are as before; a group past its rate is left alone."""
    app = tg_app(telegram={"answer_in_groups": "questions", "auto_answers_per_minute": 3})
    group, mention = -1002, f"@{standin.username}"
    async with running(app):
        asked = standin.send_text(ANSWERED, chat_id=group, chat_type="supergroup")
        [answer] = await standin.wait_sent(1)
        assert answer.params["reply_parameters"]["message_id"] == asked["message"]["message_id"]
        standin.send_text(REFUSED, chat_id=group, chat_type="supergroup")  # refused: quiet
        standin.send_text("the deploy is done", chat_id=group, chat_type="supergroup")  # not a question
        human = standin.message_update("my db is slow", chat_id=group, chat_type="supergroup", user_id=900)["message"]
        standin.send_text("Which embedder for Persian?", chat_id=group, chat_type="supergroup", reply_to=human)
        # the third a minute (after ANSWERED and REFUSED) is answered, the fourth left alone
        standin.send_text("How do I re-ingest documents?", chat_id=group, chat_type="supergroup")
        standin.send_text("Who can run admin commands?", chat_id=group, chat_type="supergroup")
        # a mention is answered whatever the rate, and comes after all of the above (one chat, in order)
        standin.send_text(f"{mention} Can I use PostgreSQL?", chat_id=group, chat_type="supergroup",
                          entities=[{"type": "mention", "offset": 0, "length": len(mention)}])
        await standin.wait_sent(3)
    assert [(t.question, t.refused) for t in app.store.turns()] == [
        (ANSWERED, False), (REFUSED, True), ("How do I re-ingest documents?", False), ("Can I use PostgreSQL?", False)]
    assert len(standin.sent(group)) == 3


async def test_groups_answer_mentions_only_by_default(tg_app: Callable[..., App], standin: TelegramStandIn) -> None:
    app = tg_app()
    group, mention = -1003, f"@{standin.username}"
    async with running(app):
        standin.send_text(ANSWERED, chat_id=group, chat_type="group")
        standin.send_text(f"{mention} {ANSWERED}", chat_id=group, chat_type="group",
                          entities=[{"type": "mention", "offset": 0, "length": len(mention)}])
        await standin.wait_sent(1)
    assert len(app.store.turns()) == 1


async def test_groups_and_a_server_without_drafts_show_typing(tg_app: Callable[..., App],
                                                              standin: TelegramStandIn) -> None:
    app = tg_app()
    mention = f"@{standin.username}"
    async with running(app):
        standin.send_text(f"{mention} {ANSWERED}", chat_id=-1004, chat_type="group",
                          entities=[{"type": "mention", "offset": 0, "length": len(mention)}])
        await standin.wait_sent(1)
        assert standin.of("sendMessageDraft") == []
        assert standin.of("sendChatAction")[0].params == {"chat_id": -1004, "action": "typing"}
        standin.drafts_missing = True  # a Bot API server older than 9.3
        standin.send_text(ANSWERED, chat_id=508)
        await standin.wait_sent(1, chat_id=508)
        standin.send_text(ANSWERED, chat_id=508)
        await standin.wait_sent(2, chat_id=508)
    assert len([c for c in standin.calls if c.method == "sendMessageDraft"]) == 1  # refused once, not tried again
    assert [c.params["chat_id"] for c in standin.of("sendChatAction")].count(508) >= 2


async def test_ask_a_person_in_a_group_turns_the_experts_answer_into_an_faq(tg_app: Callable[..., App],
                                                                           standin: TelegramStandIn) -> None:
    """A refusal in a group with experts offers "Ask a person"; a press tags the experts (by id)
    in a reply, once; an expert's reply to that message becomes an FAQ draft (an emoji does
    not); saved as FAQ, it answers the next asker. A private chat offers no such button."""
    expert = 4100
    app = tg_app(telegram={"experts": (str(expert),)})
    group, mention = -1005, f"@{standin.username}"
    entity = [{"type": "mention", "offset": 0, "length": len(mention)}]
    async with running(app):
        standin.send_text(f"{mention} {REFUSED}", chat_id=group, chat_type="supergroup", entities=entity)
        [refusal] = await standin.wait_sent(1, chat_id=group)
        turn = app.store.turns()[0]
        assert ("Ask a person", f"e:{turn.id}") in buttons(refusal)
        standin.press(refusal.result, f"e:{turn.id}", user_id=777)
        [_, tagged] = await standin.wait_sent(2, chat_id=group)
        assert tagged.params["reply_parameters"]["message_id"] == refusal.result["message_id"]
        assert tagged.params["text"].startswith("👤: ") and REFUSED in tagged.params["text"]
        [tag] = tagged.params["entities"]
        assert (tag["type"], tag["offset"], tag["length"], tag["user"]["id"]) == ("text_mention", 0, 2, expert)
        standin.press(refusal.result, f"e:{turn.id}", user_id=778)  # again: the experts were asked already
        await standin.wait_for(lambda: len(standin.of("answerCallbackQuery")) == 2)
        assert "asked already" in standin.of("answerCallbackQuery")[-1].params["text"]
        standin.send_text("👍", chat_id=group, chat_type="supergroup", user_id=expert, reply_to=tagged.result)
        standin.send_text("Transcripts can only go to SQLite or PostgreSQL, not MySQL.", chat_id=group,
                          chat_type="supergroup", user_id=expert, reply_to=tagged.result)
        [*_, thanks] = await standin.wait_sent(3, chat_id=group)
        assert thanks.params["text"].startswith("Thanks! Your answer went to the admins as an FAQ draft")
        [item] = app.desk.queue.entries()
        assert (item.origin, item.draft) == ("expert", "Transcripts can only go to SQLite or PostgreSQL, not MySQL.")
        assert app.review("telegram", str(ADMIN), "faq", item.id).ok
        standin.send_text(REFUSED, chat_id=509)  # the next asker, in a private chat
        [answer] = await standin.wait_sent(1, chat_id=509)
        assert "SQLite or PostgreSQL, not MySQL" in answer.params["text"]
        standin.send_text("Can I store transcripts in Oracle?", chat_id=510)
        [private] = await standin.wait_sent(1, chat_id=510)
    assert not [b for b in buttons(private) if b[1].startswith("e:")]  # no experts in a private chat
    assert app.stats()["escalations"] == {"escalated": 1, "answered_by_people": 1, "turned_into_faq": 1}
