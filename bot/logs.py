"""Log output: human text on a terminal, or one JSON object per line for a log collector.

`[log] format = "json"` writes every record as JSON with its time, level, logger, message and,
while a turn runs, the turn's `turn_uid` and `conversation` key (core/turnlog.py), so the
lines of one turn can be found among many workers' interleaved output and joined with its row
in the transcript database. Secrets are redacted before any formatter sees a record
(bot/redact.py); the JSON line is scrubbed once more, since a field taken from the record's
extras never went through the message formatting the redactor inspects.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import Any, TextIO

from core.turnlog import current

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
FORMATS = ("text", "json")
# attributes every LogRecord has; anything else on a record came from `extra=` and is logged too
_STANDARD = set(vars(logging.makeLogRecord({}))) | {"message", "asctime", "taskName", "color_message"}


class JsonFormatter(logging.Formatter):
    """One JSON object per record: time, level, logger, message, turn context, extras, traceback."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
            "process": record.process,
        }
        entry.update({k: v for k, v in current().items() if v})
        for key, value in vars(record).items():
            if key not in _STANDARD and not key.startswith("_"):
                entry[key] = value if isinstance(value, (str, int, float, bool, type(None))) else str(value)
        if record.exc_info and record.exc_info[0] is not None:
            entry["exception"] = self.formatException(record.exc_info)
        elif record.exc_text:
            entry["exception"] = record.exc_text
        if record.stack_info:
            entry["stack"] = record.stack_info
        line = json.dumps(entry, ensure_ascii=False, default=str)
        from bot.redact import installed_redactor

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
    return handler


def _level(name: str) -> int:
    value = logging.getLevelName(name.upper())
    if not isinstance(value, int):
        raise ValueError(f"[log] level must be one of debug, info, warning, error, not {name!r}")
    return value
