"""Keep groundbot's secrets out of every log line.

The bot token, webhook secret, Slack tokens, signing secret and OpenAI API key end up in
URLs and request lines that libraries log (httpx writes the Telegram Bot API URL, which
holds the token, on every request). `install_redaction(config.secrets)` replaces each
configured secret with `[REDACTED:<ENV_NAME>]`.

Why a log record factory and not only a handler filter: a filter on a logger sees only the
records logged to that very logger, and a filter on the root logger's handlers misses
handlers that a library (or an operator's logging config) adds later to its own logger.
Every record of every logger is made by `logging.getLogRecordFactory()`, after the level
check and before any filter or handler runs, so the factory is the one place that covers
them all. It formats the message with its args, the traceback and the stack, and when a
secret appears in any of them it replaces `msg`/`args`, `exc_info`/`exc_text` and
`stack_info` by redacted text: no handler, formatter or structured log consumer ever holds
the secret. The same scrub also runs as a filter on the root logger's handlers, for records
that bypass the factory (`logging.makeLogRecord`, a library's own `makeRecord`).
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import quote

from pydantic import SecretStr

_MARK = "_groundbot_redacted"


class SecretRedactor(logging.Filter):
    """Replaces configured secrets (env name -> value) in log records, in place."""

    def __init__(self, secrets: Mapping[str, str]) -> None:
        super().__init__()
        self.set_secrets(secrets)

    def set_secrets(self, secrets: Mapping[str, str]) -> None:
        """Swap the secrets atomically (one compiled pattern), longest first so overlaps redact whole."""
        forms: dict[str, str] = {}
        for name, value in secrets.items():
            if not value:
                continue
            for form in (value, quote(value, safe=""), quote(value, safe="/:")):
                forms.setdefault(form, name)
        ordered = sorted(forms, key=len, reverse=True)
        pattern = re.compile("|".join(map(re.escape, ordered))) if ordered else None
        self._state: tuple[re.Pattern[str] | None, dict[str, str]] = (pattern, forms)

    def redact(self, text: str) -> str:
        pattern, names = self._state
        if pattern is None or not text:
            return text
        return pattern.sub(lambda m: f"[REDACTED:{names[m.group(0)]}]", text)

    def _holds_secret(self, text: str) -> bool:
        pattern = self._state[0]
        return pattern is not None and pattern.search(text) is not None

    def scrub(self, record: logging.LogRecord) -> None:
        """Redact the formatted message, traceback and stack of `record` (idempotent)."""
        if self._state[0] is None or record.__dict__.get(_MARK):
            return
        try:
            message = record.getMessage()
        except Exception:  # wrong args for the format: keep both, redacted, so nothing is lost or leaked
            message = f"{record.msg} (unformatted arguments: {record.args!r})"
        raw_args = record.args if isinstance(record.args, tuple) else (record.args,)
        if self._holds_secret(message) or any(isinstance(a, str) and self._holds_secret(a) for a in raw_args):
            record.msg, record.args = self.redact(message), ()
        if record.exc_info and record.exc_info[0] is not None:
            text = record.exc_text or logging.Formatter().formatException(record.exc_info)
            if self._holds_secret(text):
                record.exc_info, record.exc_text = None, self.redact(text)
        elif record.exc_text and self._holds_secret(record.exc_text):
            record.exc_text = self.redact(record.exc_text)
        if record.stack_info and self._holds_secret(record.stack_info):
            record.stack_info = self.redact(record.stack_info)
        record.__dict__[_MARK] = True

    def filter(self, record: logging.LogRecord) -> bool:
        self.scrub(record)
        return True


class _Installed:
    """What install_redaction put in place, so a second call updates it and tests can undo it."""

    def __init__(self, redactor: SecretRedactor, previous: Callable[..., logging.LogRecord]) -> None:
        self.redactor = redactor
        self.previous = previous
        self.handlers: list[logging.Handler] = []


_lock = threading.Lock()
_installed: _Installed | None = None  # the record factory is process-wide, so is this


def install_redaction(secrets: Mapping[str, str | SecretStr]) -> SecretRedactor:
    """Redact `secrets` (env name -> value, as config.secrets holds them) in every log record from now on.

    Installs one record factory (chained to the one in place) and adds the filter to the
    root logger's current handlers; calling it again only swaps the secrets.
    """
    global _installed
    plain = {name: v.get_secret_value() if isinstance(v, SecretStr) else v for name, v in secrets.items()}
    with _lock:
        if _installed is None:
            redactor = SecretRedactor(plain)
            previous = logging.getLogRecordFactory()

            def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
                record = previous(*args, **kwargs)
                redactor.scrub(record)
                return record

            _installed = _Installed(redactor, previous)
            logging.setLogRecordFactory(factory)
        else:
            _installed.redactor.set_secrets(plain)
        for handler in logging.getLogger().handlers:
            if _installed.redactor not in handler.filters:
                handler.addFilter(_installed.redactor)
                _installed.handlers.append(handler)
        return _installed.redactor


def uninstall_redaction() -> None:
    """Undo install_redaction (tests install it with canary secrets and must leave no trace)."""
    global _installed
    with _lock:
        if _installed is None:
            return
        logging.setLogRecordFactory(_installed.previous)
        for handler in _installed.handlers:
            handler.removeFilter(_installed.redactor)
        _installed = None


def installed_redactor() -> SecretRedactor | None:
    """The redactor in place, if any."""
    return _installed.redactor if _installed else None
