"""The reference of every config.toml key in docs/configuration.md, generated from the schema.

Why generated: the schema (bot/config.py and the settings dataclasses it names) holds each key's
type, default and description once; a hand-kept list drifts from it, and config.toml is kept short,
as an example of what people change. `python -m bot.config_reference` rewrites the part of
docs/configuration.md between its two markers; a test fails when they differ. The part is not
indexed (storage/ingestion/loaders.py): its rows would crowd out the prose sections of the
bundled knowledge base that answer questions about setting groundbot up.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import typing
from pathlib import Path
from typing import Any

from pydantic import ConfigDict, create_model

from bot.config import Config, core_table
from bot.config_errors import describe
from core.profiles import THRESHOLD_KEYS
from storage.ingestion.loaders import INDEXED, NOT_INDEXED

BEGIN = "<!-- the settings reference: generated from the schema by `python -m bot.config_reference` -->"
END = "<!-- end of the settings reference -->"
DOC = Path(__file__).resolve().parents[1] / "docs" / "configuration.md"


def _value(value: Any) -> str:
    """A default as it is written in config.toml."""
    if value is None:
        return "unset"
    if isinstance(value, Path):
        value = str(value)
    if isinstance(value, tuple):
        value = [str(v) for v in value]
    if isinstance(value, dict):
        return "a table" if value else "{}"
    return json.dumps(value, ensure_ascii=False)


def _descriptions(cls: type) -> dict[str, str]:
    """Key -> description of a table's dataclass, as pydantic reads them from the attribute
    docstrings (of the class and of the classes it extends)."""
    out: dict[str, str] = {}
    for base in reversed(cls.__mro__):
        if dataclasses.is_dataclass(base):
            probe = create_model("Probe", __config__=ConfigDict(use_attribute_docstrings=True), table=(base, ...))
            schema = probe.model_json_schema()["$defs"][base.__name__]
            out.update({k: str(p["description"]) for k, p in schema.get("properties", {}).items() if "description" in p})
    return out


def _one_line(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _rows(cls: type, default: Any, described: dict[str, str], profiled: tuple[str, ...]) -> list[str]:
    hints = typing.get_type_hints(cls, include_extras=True)
    rows = ["| key | type | default | what it does |", "| --- | --- | --- | --- |"]
    for f in dataclasses.fields(cls):
        if default is not None:
            shown = _value(getattr(default, f.name))
        elif f.default is not dataclasses.MISSING:
            shown = _value(f.default)
        else:
            shown = "(required)" if f.default_factory is dataclasses.MISSING else _value(f.default_factory())
        if f.name in profiled:
            shown += " (the embedder's profile sets it)"
        rows.append(f"| `{f.name}` | {describe(hints[f.name])} | `{shown}` | {_one_line(described.get(f.name, ''))} |")
    return rows


def reference() -> str:
    """The reference section: every table of the schema with its keys, types, defaults and descriptions."""
    defaults = Config()
    lines = [BEGIN, NOT_INDEXED, "", "## What does every setting do?", "",
             "Each table of config.toml with each of its keys; any key can also be set as the environment "
             "variable `GROUNDBOT_<TABLE>__<KEY>`. Keys marked as set by the embedder's profile take the "
             "calibrated value of `[embedder] name` unless config.toml sets them."]
    for name, field in Config.model_fields.items():
        annotation = field.annotation
        item = typing.get_args(annotation)[0] if typing.get_origin(annotation) is tuple else None
        if isinstance(item, type) and dataclasses.is_dataclass(item):  # [[scopes]], [[sources]]: arrays of tables
            lines += ["", f"### [[{name}]]", "", _one_line(field.description or ""), ""]
            lines += _rows(item, None, _descriptions(item), ())
            continue
        if not (isinstance(annotation, type) and dataclasses.is_dataclass(annotation)):  # a table of free keys
            lines += ["", f"### [{name}]", "", _one_line(field.description or ""),
                      "", f"Default: `{json.dumps({k: list(v) for k, v in getattr(defaults, name).items()})}`."]
            continue
        doc = (annotation.__doc__ or "") if not (annotation.__doc__ or "").startswith(annotation.__name__ + "(") else ""
        lines += ["", f"### [{name}]", ""] + ([_one_line(doc), ""] if doc else [])
        profiled = next((keys for section, keys in THRESHOLD_KEYS.items() if core_table(section) == name), ())
        lines += _rows(annotation, getattr(defaults, name), _descriptions(annotation), profiled)
    return "\n".join(lines + ["", INDEXED, END]) + "\n"


def rewritten(text: str) -> str:
    """`text` (docs/configuration.md) with its reference section replaced, or appended when missing."""
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        return head + reference() + rest.split(END, 1)[1].lstrip("\n")
    return text.rstrip("\n") + "\n\n" + reference()


def main() -> int:
    DOC.write_text(rewritten(DOC.read_text(encoding="utf-8")), encoding="utf-8")
    print(f"wrote the settings reference into {DOC}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
