"""config.toml's tables and keys, derived from the settings dataclasses, and a validating reader.

The dataclasses (bot/config.py, core/settings.py) are the schema and hold the only defaults.
A field of the root class is a table of its own name when its type is a dataclass; other
fields say where they live with `at(table, key)`. Values are checked with pydantic against
the field's type, so a bad file fails at start-up with its name, the table, the key and the
expected type; an unknown table or key fails too, with the closest known name.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import typing
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar

from pydantic import TypeAdapter, ValidationError

META = "groundbot.config"
T = TypeVar("T")
WHOLE_TABLE = "*"  # `at(table, WHOLE_TABLE)`: the table itself is the value (free keys, e.g. [admins])


def at(table: str, key: str = "") -> dict[str, Any]:
    """Field metadata: this setting is `key` (default: the field's name) of config.toml's [table]."""
    return {META: ("at", table, key)}


def table(name: str, **renamed: str) -> dict[str, Any]:
    """Field metadata: this dataclass is config.toml's [name]; `renamed` maps field -> key."""
    return {META: ("table", name, renamed)}


def flattened(**renamed: str) -> dict[str, Any]:
    """Field metadata: each field of this dataclass is a table of its own name (or `renamed`'s)."""
    return {META: ("flat", renamed)}


def without_file() -> dict[str, Any]:
    """Field metadata: not read from config.toml (computed, or from the environment)."""
    return {META: ("none",)}


class ConfigError(ValueError):
    """config.toml does not fit the schema; the message names the file, table and key."""


@dataclass(frozen=True)
class Setting:
    """One key of config.toml: where it is read into, its type and its built-in default."""

    table: str
    key: str
    path: tuple[str, ...]
    hint: Any
    default: Any


def _hints(cls: Any) -> dict[str, Any]:
    return typing.get_type_hints(cls, include_extras=True)


def _table_fields(cls: Any, name: str, prefix: tuple[str, ...], default: Any,
                  renamed: Mapping[str, str]) -> list[Setting]:
    hints = _hints(cls)
    return [Setting(name, renamed.get(f.name, f.name), (*prefix, f.name), hints[f.name], getattr(default, f.name))
            for f in dataclasses.fields(cls)]


def _field_settings(f: dataclasses.Field[Any], hint: Any, default: Any) -> list[Setting]:
    kind, *args = f.metadata.get(META, ("table", f.name, {}))
    if kind == "none":
        return []
    if kind == "at":
        return [Setting(args[0], args[1] or f.name, (f.name,), hint, default)]
    if not dataclasses.is_dataclass(hint):
        raise TypeError(f"{f.name}: a setting that is not a dataclass needs at(table) metadata")
    if kind == "table":
        return _table_fields(hint, args[0], (f.name,), default, args[1])
    hints = _hints(hint)
    return [s for g in dataclasses.fields(hint)
            for s in _table_fields(hints[g.name], args[0].get(g.name, g.name), (f.name, g.name),
                                   getattr(default, g.name), {})]


@functools.cache
def layout(root: type) -> dict[tuple[str, str], Setting]:
    """(table, key) -> Setting for every key config.toml may hold, in declaration order."""
    defaults, hints, out = root(), _hints(root), {}
    for f in dataclasses.fields(root):
        for s in _field_settings(f, hints[f.name], getattr(defaults, f.name)):
            if (s.table, s.key) in out:
                raise TypeError(f"[{s.table}] {s.key} is declared twice in {root.__name__}")
            out[(s.table, s.key)] = s
    return out


@functools.cache
def _adapter(hint: Any) -> TypeAdapter[Any]:
    return TypeAdapter(hint)


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
    if origin in (tuple, list):
        return f"a list of {describe(args[0]).removeprefix('a ')}s"
    if origin is dict:
        return f"a table of {describe(args[1]).removeprefix('a ')}s"
    return str(hint)


def _check(s: Setting, raw: Any, source: str) -> Any:
    where = f"[{s.table}]" if s.key == WHOLE_TABLE else f"[{s.table}] {s.key}"
    try:
        value = _adapter(s.hint).validate_python(raw)
    except ValidationError as exc:
        detail = exc.errors()[0]["msg"]
        raise ConfigError(f"{source}: {where} = {raw!r}: expected {describe(s.hint)} ({detail})") from None
    return {**s.default, **value} if isinstance(s.default, dict) else value


def _unknown(table_name: str, key: str | None, settings: Mapping[tuple[str, str], Setting], source: str) -> ConfigError:
    tables = list(dict.fromkeys(t for t, _ in settings))
    if key is None:
        close = difflib.get_close_matches(table_name, tables, n=1)
        hint = f"; did you mean [{close[0]}]?" if close else f" (known tables: {', '.join(tables)})"
        return ConfigError(f"{source}: unknown table [{table_name}]{hint}")
    keys = [k for t, k in settings if t == table_name]
    close = difflib.get_close_matches(key, keys, n=1)
    elsewhere = [t for t, k in settings if k == key]
    hint = (f"; did you mean {close[0]}?" if close else f"; it belongs in [{elsewhere[0]}]" if elsewhere
            else f" (known keys: {', '.join(keys)})")
    return ConfigError(f"{source}: unknown setting [{table_name}] {key}{hint}")


def read(root: type, data: Mapping[str, Any], source: str) -> dict[tuple[str, ...], Any]:
    """The settings a parsed config.toml sets, checked: attribute path -> value."""
    settings = layout(root)
    tables = {t for t, _ in settings}
    values: dict[tuple[str, ...], Any] = {}
    for name, body in data.items():
        if name not in tables:
            raise _unknown(name, None, settings, source)
        if not isinstance(body, dict):
            raise ConfigError(f"{source}: {name} = {body!r}: expected a table [{name}]")
        whole = settings.get((name, WHOLE_TABLE))
        if whole is not None:
            values[whole.path] = _check(whole, body, source)
            continue
        for key, raw in body.items():
            setting = settings.get((name, key))
            if setting is None:
                raise _unknown(name, key, settings, source)
            values[setting.path] = _check(setting, raw, source)
    return values


def apply(obj: Any, values: Mapping[tuple[str, ...], Any]) -> Any:
    """`obj` (a dataclass) with the values at their attribute paths replaced."""
    nested: dict[str, dict[tuple[str, ...], Any]] = {}
    changes: dict[str, Any] = {}
    for path, value in values.items():
        if len(path) == 1:
            changes[path[0]] = value
        else:
            nested.setdefault(path[0], {})[path[1:]] = value
    changes.update({name: apply(getattr(obj, name), sub) for name, sub in nested.items()})
    return replace(obj, **changes)


def load_toml(root: type[T], data: Mapping[str, Any], source: str) -> tuple[T, dict[tuple[str, ...], Any]]:
    """An instance of `root` from a parsed TOML file, and the settings the file set explicitly."""
    values = read(root, data, source)
    try:
        return apply(root(), values), values
    except ValueError as exc:  # a settings class that checks its values (__post_init__) refused them
        raise ConfigError(f"{source}: {exc}") from None


def _raw_value(hint: Any, raw: str) -> Any:
    """An environment variable's text as the setting's type expects it: text settings take it as
    is; others are read as a TOML value (`8`, `0.5`, `true`, `["a", "b"]`), else left as text for
    the validator to refuse with its usual message."""
    import tomllib

    base = typing.get_args(hint)[0] if typing.get_origin(hint) is typing.Annotated else hint
    literal = typing.get_origin(base) is typing.Literal and all(isinstance(a, str) for a in typing.get_args(base))
    if base in (str, Path) or literal:
        return raw
    try:
        return tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        return raw


def environment_tables(root: type, environ: Mapping[str, str], prefix: str) -> dict[str, dict[str, Any]]:
    """The settings the environment overrides, as config.toml tables: `<PREFIX><TABLE>__<KEY>`
    (e.g. GROUNDBOT_STORAGE__LOCK_BUDGET_S=30) is [table] key. Each variable is checked on its
    own first, so an error names the variable, with the same did-you-mean as the file's."""
    settings = layout(root)
    tables: dict[str, dict[str, Any]] = {}
    for name, raw in sorted(environ.items()):
        if not name.startswith(prefix) or "__" not in name:
            continue
        table_name, _, key = name[len(prefix):].lower().partition("__")
        setting = settings.get((table_name, key)) or settings.get((table_name, WHOLE_TABLE))
        value: Any = raw
        if setting is not None:  # a whole table's key holds one of its values (dict[str, V] -> V)
            value = _raw_value(typing.get_args(setting.hint)[1] if setting.key == WHOLE_TABLE else setting.hint, raw)
        read(root, {table_name: {key: value}}, f"environment variable {name}")
        tables.setdefault(table_name, {})[key] = value
    return tables
