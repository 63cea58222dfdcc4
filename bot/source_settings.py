"""Synced sources in config.toml (`[[sources]]`): websites, Git repositories and wikis whose
documents `groundbot sync`, `/reingest` and `groundbot serve` keep in the index (docs/sources.md).

Why checked here, at start: a source that names an unknown scope, a token written in the file
instead of an environment variable, or an interval of "soon" must stop groundbot with a message
that names the entry and the key, not fail at 3 a.m. in the middle of a sync.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import fields, replace
from typing import Any

from pydantic import TypeAdapter, ValidationError

from bot.scopes import ScopeError, named_entries
from storage.ingestion.sources.base import KINDS, SourceKind, SourceSpec

_INTERVAL = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|h|d)?\s*$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
MIN_INTERVAL_S = 60.0
ENV_NAME = re.compile(r"^[A-Z_][A-Z0-9_]*$")


class SourceError(ScopeError):
    """`[[sources]]` does not make sense; the message names the source and the key (the file is
    added by bot/config_errors.py)."""


def parse_interval(value: Any, where: str) -> float:
    """"30m", "6h", "1d", "90s" or a number of seconds; 0 or "" = synced only when asked."""
    if value in ("", 0, "0"):
        return 0.0
    m = _INTERVAL.match(str(value)) if isinstance(value, (str, int, float)) and not isinstance(value, bool) else None
    if m is None:
        raise SourceError(f"{where} interval: expected e.g. \"30m\", \"6h\", \"1d\" or seconds, got {value!r}")
    seconds = float(m.group(1)) * _UNITS[m.group(2) or "s"]
    if seconds < MIN_INTERVAL_S:
        raise SourceError(f"{where} interval: at least {MIN_INTERVAL_S:.0f} seconds, got {value!r}")
    return seconds


def parse_sources(raw: Any) -> tuple[SourceSpec, ...]:
    """The `[[sources]]` array of a parsed config.toml, each entry checked on its own."""
    keys = [f.name for f in fields(SourceSpec)]
    out = []
    for where, _name, entry in named_entries(raw, "sources", keys, SourceError):
        if entry.get("kind") not in KINDS:
            raise SourceError(f"{where}: kind must be one of {', '.join(KINDS)}, got {entry.get('kind')!r}")
        if not isinstance(entry.get("url"), str) or not entry["url"].strip():
            raise SourceError(f"{where}: url is required (a sitemap, a start page, a repository or a wiki)")
        body = {k: v for k, v in entry.items() if k != "interval"}
        try:
            spec = TypeAdapter(SourceSpec).validate_python(body)
        except ValidationError as exc:
            first = exc.errors()[0]
            raise SourceError(f"{where} {'.'.join(str(p) for p in first['loc'])}: {first['msg']}") from None
        out.append(replace(spec, url=spec.url.strip(), interval=parse_interval(entry.get("interval", 0), where)))
    return tuple(out)


def check_sources(specs: Sequence[SourceSpec], scope_names: Sequence[str]) -> None:
    """What must hold across entries: unique names, scopes that exist, secrets by variable name."""
    names = [s.name for s in specs]
    for name in {n for n in names if names.count(n) > 1}:
        raise SourceError(f"source {name!r} is defined twice")
    for s in specs:
        where = f"source {s.name!r}"
        for scope in s.scopes:
            if scope not in scope_names:
                raise SourceError(f"{where}: scope {scope!r} is not a [[scopes]] entry "
                                  f"(known: {', '.join(scope_names) or 'none'})")
        if scope_names and not s.scopes:
            raise SourceError(f"{where}: scopes is empty; with [[scopes]] configured, name the scopes it feeds")
        for key in ("token_env", "user_env"):
            value = getattr(s, key)
            if value and not ENV_NAME.match(value):
                raise SourceError(f"{where} {key}: the name of an environment variable (e.g. "
                                  f"GROUNDBOT_WIKI_TOKEN), never the secret itself")
        if s.kind in (SourceKind.CONFLUENCE, SourceKind.NOTION):
            _check_wiki(s, where)
        if s.kind == SourceKind.WEB and not s.url.startswith(("http://", "https://")):
            raise SourceError(f"{where}: a web source's url must start with http:// or https://")


def _check_wiki(s: SourceSpec, where: str) -> None:
    """A Confluence or Notion source names its token's variable, its API's address and what to read."""
    if not s.token_env:
        raise SourceError(f"{where}: a {s.kind} source needs token_env (the variable holding its token)")
    if not s.url.startswith(("http://", "https://")):
        raise SourceError(f"{where}: a {s.kind} source's url must start with http:// or https:// (its API's address)")
    if s.kind == SourceKind.CONFLUENCE and not (s.space or s.pages):
        raise SourceError(f"{where}: a confluence source needs space (a space key) or pages (page ids)")
    if s.kind == SourceKind.NOTION and not (s.pages or s.databases):
        raise SourceError(f"{where}: a notion source needs pages or databases (their ids)")
