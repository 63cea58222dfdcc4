"""Secrets never reach a log line: the redacting record factory and filter of bot/logs/redact.py."""

from __future__ import annotations

import io
import logging
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.cli.main import main as cli_main
from bot.logs.redact import SecretRedactor, install_redaction, installed_redactor, uninstall_redaction

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "424242:CANARY-telegram-token"
KEY = "sk-CANARY-openai-key"
SECRETS = {"GROUNDBOT_TELEGRAM_TOKEN": TOKEN, "GROUNDBOT_OPENAI_API_KEY": KEY, "GROUNDBOT_SLACK_APP_TOKEN": ""}


@pytest.fixture
def clean_logging() -> Iterator[None]:
    """Start without redaction (an earlier `groundbot` run in this process may have installed it)
    and leave the process-wide record factory and root handlers as they were then."""
    uninstall_redaction()
    factory, handlers = logging.getLogRecordFactory(), list(logging.getLogger().handlers)
    yield
    uninstall_redaction()
    assert logging.getLogRecordFactory() is factory
    for handler in logging.getLogger().handlers:
        if handler not in handlers:
            logging.getLogger().removeHandler(handler)


def _record(msg: str, *args: object, exc: bool = False) -> logging.LogRecord:
    exc_info = None
    if exc:
        try:
            raise RuntimeError(f"cannot reach https://api.telegram.org/bot{TOKEN}/getMe")
        except RuntimeError:
            exc_info = sys.exc_info()
    return logging.LogRecord("httpx", logging.DEBUG, __file__, 1, msg, args, exc_info)


def test_filter_redacts_message_args_and_exception_text() -> None:
    redactor = SecretRedactor(SECRETS)
    record = _record('HTTP Request: %s %s "%s"', "POST", f"https://api.telegram.org/bot{TOKEN}/getUpdates",
                     "HTTP/1.1 200 OK", exc=True)
    record.stack_info = f"Stack (most recent call last):\n  key={KEY}"
    assert redactor.filter(record) is True
    text = logging.Formatter("%(levelname)s %(name)s: %(message)s").format(record)
    assert TOKEN not in text and KEY not in text
    assert "bot[REDACTED:GROUNDBOT_TELEGRAM_TOKEN]/getUpdates" in text
    assert "RuntimeError: cannot reach https://api.telegram.org/bot[REDACTED:GROUNDBOT_TELEGRAM_TOKEN]/getMe" in text
    assert "key=[REDACTED:GROUNDBOT_OPENAI_API_KEY]" in text
    # nothing left on the record for a structured handler to find either
    assert record.args == () and record.exc_info is None and TOKEN not in repr(vars(record))


def test_url_encoded_and_overlapping_secrets_are_redacted_whole() -> None:
    redactor = SecretRedactor({"SHORT": "CANARY", "LONG": "CANARY-and-more"})
    assert redactor.redact("a CANARY-and-more b CANARY") == "a [REDACTED:LONG] b [REDACTED:SHORT]"
    assert SecretRedactor(SECRETS).redact("token=424242%3ACANARY-telegram-token") == \
        "token=[REDACTED:GROUNDBOT_TELEGRAM_TOKEN]"


def test_records_without_secrets_keep_their_args() -> None:
    record = _record("%d chunks in %s", 3, "docs", exc=False)
    SecretRedactor(SECRETS).filter(record)
    assert record.msg == "%d chunks in %s" and record.args == (3, "docs")
    broken = _record("%d items", "not a number")  # a bad format must not leak the raw args either
    broken.args = (f"not a number {TOKEN}",)
    SecretRedactor(SECRETS).filter(broken)
    assert TOKEN not in broken.getMessage() and "[REDACTED:GROUNDBOT_TELEGRAM_TOKEN]" in broken.getMessage()


def test_installed_factory_covers_handlers_added_later(clean_logging: None) -> None:
    install_redaction(SECRETS)
    buffer = io.StringIO()
    late = logging.StreamHandler(buffer)  # a library adding its own handler after start-up
    lib = logging.getLogger("groundbot-test.library")
    lib.addHandler(late)
    lib.setLevel(logging.DEBUG)
    try:
        lib.debug("calling %s", f"https://api.telegram.org/bot{TOKEN}/getMe")
        try:
            raise ValueError(KEY)
        except ValueError:
            lib.exception("failed with key")
    finally:
        lib.removeHandler(late)
        lib.setLevel(logging.NOTSET)
    out = buffer.getvalue()
    assert TOKEN not in out and KEY not in out
    assert "bot[REDACTED:GROUNDBOT_TELEGRAM_TOKEN]/getMe" in out and "ValueError: [REDACTED:GROUNDBOT_OPENAI_API_KEY]" in out
    install_redaction({"OTHER": "second-secret"})  # a second install swaps the secrets, one factory stays
    assert installed_redactor() is not None and installed_redactor().redact(TOKEN + " second-secret") == \
        TOKEN + " [REDACTED:OTHER]"


def test_groundbot_verbose_installs_redaction_from_config(clean_logging: None, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("GROUNDBOT_TELEGRAM_TOKEN", TOKEN)
    monkeypatch.delenv("GROUNDBOT_TELEGRAM_WEBHOOK_SECRET", raising=False)
    # --webhook without its secret stops right after the config is loaded, before any model loads
    assert cli_main(["-v", "--config", str(ROOT / "config.toml"), "--data-dir", str(tmp_path),
                     "telegram", "--webhook"]) == 2
    capsys.readouterr()
    redactor = installed_redactor()
    assert redactor is not None
    buffer = io.StringIO()
    handler = logging.StreamHandler(buffer)
    logging.getLogger("httpx").addHandler(handler)
    try:
        logging.getLogger("httpx").warning("HTTP Request: GET %s", f"https://api.telegram.org/bot{TOKEN}/getMe")
    finally:
        logging.getLogger("httpx").removeHandler(handler)
    assert buffer.getvalue() == "HTTP Request: GET https://api.telegram.org/bot[REDACTED:GROUNDBOT_TELEGRAM_TOKEN]/getMe\n"
