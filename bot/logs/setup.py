"""Log output: human text on a terminal, or one JSON object per line for a log collector.

`[log] format = "json"` writes every record as JSON with its time, level, logger, message and,
while a turn runs, the turn's `turn_uid` and `conversation` key (core/turn/turnlog.py), so the
lines of one turn can be found among many workers' interleaved output and joined with its row
in the transcript database. Secrets are redacted before any formatter sees a record
(bot/logs/redact.py); the JSON line is scrubbed once more, since a field taken from the record's
extras never went through the message formatting the redactor inspects.
"""

from __future__ import annotations

import logging
import sys
from datetime import UTC, datetime
from typing import Any, TextIO

from pythonjsonlogger.core import RESERVED_ATTRS
from pythonjsonlogger.json import JsonFormatter as _JsonLines

from core.turn.turnlog import current

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
# libraries whose info lines say nothing an operator acts on: the MCP SDK logs a transport made
# and ended for every request /mcp answers (each stands on its own); their warnings still show
QUIET = ("mcp",)
FORMATS = ("text", "json")
_RENAMED = {"asctime": "time", "levelname": "level", "name": "logger", "exc_info": "exception", "stack_info": "stack"}


class JsonFormatter(_JsonLines):
    """One JSON object per record (python-json-logger): time, level, logger, message, process,
    the running turn's ids, the record's extras and its traceback; secrets scrubbed last."""

    def __init__(self) -> None:
        super().__init__("{asctime}{levelname}{name}{message}{process}", style="{", rename_fields=_RENAMED,
                         reserved_attrs=[*RESERVED_ATTRS, "taskName", "color_message"], json_default=str,
                         json_ensure_ascii=False)

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:  # noqa: N802 (logging's name)
        return datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds")

    def add_fields(self, log_data: dict[str, Any], record: logging.LogRecord, message_dict: dict[str, Any]) -> None:
        super().add_fields(log_data, record, message_dict)
        log_data["level"] = str(log_data.get("level", "")).lower()
        log_data.update({k: v for k, v in current().items() if v})

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        from bot.logs.redact import installed_redactor

        redactor = installed_redactor()
        return redactor.redact(line) if redactor else line


def configure_logging(fmt: str = "text", level: str = "warning", *, verbose: bool = False,
                      stream: TextIO | None = None) -> logging.Handler:
    """Send every logger's records to `stream` (stderr) in `fmt`; replaces the root handlers."""
    if fmt not in FORMATS:
        raise ValueError(f"[log] format must be one of {', '.join(FORMATS)}, not {fmt!r}")
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else logging.Formatter(TEXT_FORMAT))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(logging.DEBUG if verbose else _level(level))
    for name in QUIET:
        logging.getLogger(name).setLevel(logging.DEBUG if verbose else max(logging.WARNING, _level(level)))
    return handler


def _level(name: str) -> int:
    value = logging.getLevelName(name.upper())
    if not isinstance(value, int):
        raise ValueError(f"[log] level must be one of debug, info, warning, error, not {name!r}")
    return value
