"""What a wrong config.toml or GROUNDBOT_* variable is told: the file (or the variable), the table,
the key, the value and the type it should have, and for an unknown name the closest known one.

Why not pydantic's own message: "storage.lock_budge_s  Extra inputs are not permitted" tells an
operator neither where the mistake is nor what was meant, and a start-up error is read by someone
who has not seen the schema.
"""

from __future__ import annotations

import difflib
import enum
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from bot.scopes import ScopeError

UNKNOWN = ("extra_forbidden", "unexpected_keyword_argument")


class ConfigError(ValueError):
    """config.toml does not fit the schema; the message names the file, table and key."""


def describe(hint: Any) -> str:
    """A reader's name for a type: 'a number', 'a list of strings', ..."""
    names = {float: "a number", int: "a whole number", bool: "true or false", str: "a string", Path: "a path"}
    if hint in names:
        return names[hint]
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Annotated:
        return describe(args[0])
    if origin is typing.Literal:
        return "one of " + ", ".join(repr(a) for a in args)
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return "one of " + ", ".join(repr(m.value) for m in hint)
    if origin in (tuple, list):
        return f"a list of {describe(args[0]).removeprefix('a ')}s"
    if origin is dict:
        return f"a table of {describe(args[1]).removeprefix('a ')}s"
    if origin in (typing.Union, types.UnionType):
        return " or ".join(describe(a) for a in args if a is not type(None)) + " (or unset)"
    return getattr(hint, "__name__", str(hint))


def unknown_table(name: str, tables: Sequence[str], source: str) -> ConfigError:
    close = difflib.get_close_matches(name, tables, n=1)
    hint = f"; did you mean [{close[0]}]?" if close else f" (known tables: {', '.join(tables)})"
    return ConfigError(f"{source}: unknown table [{name}]{hint}")


def unknown_key(table: str, key: str, keys: Sequence[str], elsewhere: Sequence[str], source: str) -> ConfigError:
    close = difflib.get_close_matches(key, keys, n=1)
    hint = (f"; did you mean {close[0]}?" if close else f"; it belongs in [{elsewhere[0]}]" if elsewhere
            else f" (known keys: {', '.join(keys)})")
    return ConfigError(f"{source}: unknown setting [{table}] {key}{hint}")


def explain(exc: ValidationError, source: str, hints_of: Callable[[str], dict[str, Any]], tables: Sequence[str],
            from_environment: Mapping[str, Any], prefix: str) -> Exception:
    """The first error of a failed validation, said as an operator needs it: `source` (the file,
    or the variable in `from_environment` that set the value), the table, the key and the value."""
    error = exc.errors()[0]
    loc = [str(p) for p in error["loc"]]
    cause = (error.get("ctx") or {}).get("error")
    table = loc[0] if loc else ""
    key = loc[1] if len(loc) > 1 else ""
    env_body = from_environment.get(table)
    if isinstance(env_body, dict) and key in env_body:
        source = f"environment variable {prefix}{table.upper()}__{key.upper()}"
    if isinstance(cause, (ConfigError, ScopeError)):  # the schema's own checks: what and where in the file
        return type(cause)(f"{source}: {cause}")
    if error["type"] in UNKNOWN:
        if len(loc) == 1:
            return unknown_table(table, tables, source)
        keys = [k for k in hints_of(table) if k != "*"]
        return unknown_key(table, key, keys, [t for t in tables if key in hints_of(t)], source)
    if isinstance(cause, ValueError) and error["type"] == "value_error" and len(loc) <= 1:
        return ConfigError(f"{source}: {cause}")  # a table's own check (a dataclass's __post_init__)
    value = error.get("input")
    if len(loc) == 1:
        return ConfigError(f"{source}: {table} = {value!r}: expected a table [{table}]")
    hints = hints_of(table)
    hint = hints.get(key, hints.get("*"))  # a table of free keys ([admins]): the type of each value
    if hint is None:
        return ConfigError(f"{source}: [{table}] {key} = {value!r}: {error['msg']}")
    return ConfigError(f"{source}: [{table}] {key} = {value!r}: expected {describe(hint)} ({error['msg']})")
