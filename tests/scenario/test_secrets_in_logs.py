"""Secrets never reach the logs: the Telegram, Slack and OpenAI paths run at DEBUG with canary
secrets, through the real libraries against their local stand-ins, and no log output holds a
canary (caplog on the root logger, a real StreamHandler added after start-up, and a handler a
library might add to its own logger)."""

from __future__ import annotations

import io
import logging
import shutil
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from adapters.slack import SlackAdapter
from bot.app import App, build_app
from bot.config import Config, load_config
from bot.logs.redact import install_redaction, uninstall_redaction
from bot.settings import TelegramSettings
from core.messages import ConversationKey, Incoming
from tests.scenario.test_slack import SECRET as SLACK_SIGNING
from tests.scenario.test_slack import Slack, sign, stop_socket
from tests.scenario.test_telegram import ANSWERED, running
from tests.standins.openai import OpenAIStandIn
from tests.standins.slack import SlackStandIn
from tests.standins.telegram import TelegramStandIn

ROOT = Path(__file__).resolve().parents[2]
CANARIES = {
    "GROUNDBOT_TELEGRAM_TOKEN": "918273:CANARY-tg-token-q7Zx",
    "GROUNDBOT_TELEGRAM_WEBHOOK_SECRET": "CANARY-tg-webhook-secret-k3",
    "GROUNDBOT_SLACK_BOT_TOKEN": "xoxb-CANARY-slack-bot-81c",
    "GROUNDBOT_SLACK_APP_TOKEN": "xapp-CANARY-slack-app-52d",
    "GROUNDBOT_SLACK_SIGNING_SECRET": SLACK_SIGNING,  # what the Slack helpers sign with
    "GROUNDBOT_OPENAI_API_KEY": "sk-CANARY-openai-key-9f0",
}
# loggers of the libraries groundbot drives; each also gets a handler of its own, added late
LIBRARIES = ("httpx", "httpcore", "telegram", "slack_bolt", "slack_sdk", "openai", "aiohttp", "urllib3")


@dataclass
class Logs:
    caplog: pytest.LogCaptureFixture
    buffer: io.StringIO

    def text(self) -> str:
        """Every line any of the handlers wrote, plus everything a structured handler could read."""
        records = "\n".join(repr(vars(r)) + r.getMessage() for r in self.caplog.records)
        return "\n".join([self.caplog.text, self.buffer.getvalue(), records])

    def assert_clean(self) -> str:
        text = self.text()
        for name, value in CANARIES.items():
            assert value not in text, f"{name} leaked into the logs"
        return text


@pytest.fixture
def logs(caplog: pytest.LogCaptureFixture) -> Iterator[Callable[[Config], Logs]]:
    """start(config): install redaction as `groundbot` does, then log everything at DEBUG."""
    added: list[tuple[logging.Logger, logging.Handler]] = []

    def start(config: Config) -> Logs:
        install_redaction(config.secrets)  # what bot/cli/main.py main() does right after loading config
        caplog.set_level(logging.DEBUG)
        buffer = io.StringIO()
        fmt = logging.Formatter("%(levelname)s %(name)s: %(message)s")
        for name in ("", *LIBRARIES):  # handlers that exist only after redaction was installed
            handler = logging.StreamHandler(buffer)
            handler.setFormatter(fmt)
            logging.getLogger(name).addHandler(handler)
            added.append((logging.getLogger(name), handler))
        return Logs(caplog, buffer)

    yield start
    for logger, handler in added:
        logger.removeHandler(handler)
    uninstall_redaction()


def _config(**fields: Any) -> Config:
    return load_config(ROOT / "config.toml", environ=dict(CANARIES)).changed(**fields)


class _Leaky:
    """The real App, except that one question fails with an error that quotes a secret."""

    def __init__(self, app: App, secret: str) -> None:
        self.app, self.secret = app, secret

    def __getattr__(self, name: str) -> Any:
        return getattr(self.app, name)

    def ask(self, msg: Any) -> Any:
        if msg.text.endswith("crash"):
            raise RuntimeError(f"upstream said: bad credentials {self.secret}")
        return self.app.ask(msg)


# -- Telegram -------------------------------------------------------------------------------------
async def test_telegram_webhook_at_debug_logs_no_secret(make_app: Callable[..., App],
                                                        logs: Callable[[Config], Logs], free_port: int) -> None:
    standin = await TelegramStandIn(token=CANARIES["GROUNDBOT_TELEGRAM_TOKEN"]).start()
    try:
        telegram = replace(TelegramSettings(), base_url=standin.base_url, webhook_url="https://bot.example.org/tg/hook")
        app = make_app(config=_config(telegram=telegram))
        captured = logs(app.config)
        from bot.platforms import webhook_options

        hook = webhook_options(app.config, port=free_port, listen="127.0.0.1")
        secret = CANARIES["GROUNDBOT_TELEGRAM_WEBHOOK_SECRET"]
        async with running(app, hook, backend=_Leaky(app, CANARIES["GROUNDBOT_TELEGRAM_TOKEN"])), \
                aiohttp.ClientSession() as http:
            for chat_id, text in ((801, ANSWERED), (802, "crash")):
                update = {"update_id": chat_id, **standin.message_update(text, chat_id=chat_id)}
                async with http.post(f"http://127.0.0.1:{hook.port}/tg/hook", json=update,
                                     headers={"X-Telegram-Bot-Api-Secret-Token": secret}) as resp:
                    assert resp.status == 200
                await standin.wait_sent(1, chat_id=chat_id)
        assert standin.of("setWebhook")[0].params["secret_token"] == secret  # the real secrets were used
        assert "Sources:" in standin.sent(801)[0].params["text"]
    finally:
        await standin.stop()
    text = captured.assert_clean()
    # the token is in every Bot API URL httpx logs: it was there, and it was redacted
    assert "bot[REDACTED:GROUNDBOT_TELEGRAM_TOKEN]/sendMessage" in text
    assert "'secret_token': '[REDACTED:GROUNDBOT_TELEGRAM_WEBHOOK_SECRET]'" in text  # the setWebhook call
    assert "bad credentials [REDACTED:GROUNDBOT_TELEGRAM_TOKEN]" in text  # the traceback of the failed answer


# -- Slack ----------------------------------------------------------------------------------------
@pytest.fixture
def slack_api(monkeypatch: pytest.MonkeyPatch) -> Iterator[SlackStandIn]:
    for name in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy"):
        monkeypatch.delenv(name, raising=False)
    with SlackStandIn() as server:
        yield server


@pytest.mark.parametrize("mode", ["socket", "http"])
def test_slack_at_debug_logs_no_secret(mode: str, slack_api: SlackStandIn, tmp_path: Path, embedder: Any,
                                       docs_index: Path, logs: Callable[[Config], Logs]) -> None:
    shutil.copytree(docs_index, tmp_path / "data" / "index")
    cfg = _config(paths__data_dir=tmp_path / "data")
    app = build_app(cfg, embedder=embedder)
    captured = logs(cfg)
    from bot.platforms import slack_secrets

    secrets = slack_secrets(cfg, http=mode == "http")
    adapter = SlackAdapter(_Leaky(app, CANARIES["GROUNDBOT_SLACK_APP_TOKEN"]), bot_token=secrets.bot_token,
                           signing_secret=secrets.signing_secret, api_base_url=slack_api.api_url,
                           progress_interval_s=0.0)
    stops: list[Callable[[], None]] = [adapter.close]
    try:
        http = None
        if mode == "socket":
            handler = adapter.socket_mode(secrets.app_token)
            handler.connect()
            stops.insert(0, lambda: stop_socket(handler, slack_api))
        else:
            http = adapter.http_server("127.0.0.1", 0)
            threading.Thread(target=http.serve_forever, daemon=True).start()
            stops.insert(0, http.shutdown)
        bot = Slack(mode, slack_api, app, adapter, http)
        if mode == "http":  # what the signing secret guards: a forged request is turned away
            body = '{"type": "event_callback"}'
            status, _, _ = bot.post(body, "application/json", sign(body, secret="forged"))
            assert status == 401
        bot.mention(ANSWERED, ts="1800.000100")
        bot.mention("crash", ts="1800.000200")
        replies = bot.replies(2)
        assert replies[0].token == CANARIES["GROUNDBOT_SLACK_BOT_TOKEN"]
        if mode == "socket":
            assert slack_api.requests("apps.connections.open")[0].token == CANARIES["GROUNDBOT_SLACK_APP_TOKEN"]
    finally:
        for stop in stops:
            stop()
    text = captured.assert_clean()
    assert "bad credentials [REDACTED:GROUNDBOT_SLACK_APP_TOKEN]" in text


# -- OpenAI ---------------------------------------------------------------------------------------
def test_openai_generator_at_debug_logs_no_api_key(make_app: Callable[..., App],
                                                    logs: Callable[[Config], Logs]) -> None:
    with OpenAIStandIn() as llm:
        base = _config()
        cfg = base.changed(generator__kind="openai", openai=replace(base.openai, base_url=llm.base_url, timeout_s=2.0))
        app = make_app(config=cfg)
        captured = logs(app.config)
        llm.enqueue("Run groundbot ingest again with the same paths [C1].", prob=0.95)
        decision = app.ask(Incoming(ConversationKey("test", "secrets"), "u1", ANSWERED))
        assert decision.llm_called and len(llm.requests) == 1
        logging.getLogger("groundbot.test").debug("client configured with %s", app.config.secret(cfg.openai.api_key_env))
    text = captured.assert_clean()
    assert "chat/completions" in text  # the openai client's request was logged ...
    assert "client configured with [REDACTED:GROUNDBOT_OPENAI_API_KEY]" in text  # ... and a key would be redacted
