"""Every user-facing string, one catalogue per language (en.toml, fa.toml in this folder).

Adapters and commands never hold English literals: they ask `say(key, lang, **fields)`, and
the language is the question's (core/text/language.py), like the refusal message. A key missing in
a language falls back to English; a test keeps both catalogues' keys and placeholders equal. A
string is a TOML string; a list of strings (the steps a platform shows while groundbot works) is a
TOML array, read by `say_each`, so no caller splits a joined string of its own.
"""

from __future__ import annotations

import tomllib
from functools import cache
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT = "en"


@cache
def _table(lang: str) -> dict[str, object]:
    """One language's file as TOML reads it ({} for a language with no catalogue)."""
    path = HERE / f"{lang}.toml"
    if not path.is_file():
        return {}
    with path.open("rb") as fh:
        return tomllib.load(fh)


@cache
def catalogue(lang: str) -> dict[str, str]:
    """The strings of one language ({} for a language with no catalogue)."""
    return {str(k): v for k, v in _table(lang).items() if isinstance(v, str)}


@cache
def lists(lang: str) -> dict[str, tuple[str, ...]]:
    """The lists of strings of one language ({} for a language with no catalogue)."""
    return {str(k): tuple(map(str, v)) for k, v in _table(lang).items() if isinstance(v, list)}


def languages() -> list[str]:
    return sorted(p.stem for p in HERE.glob("*.toml"))


def say(key: str, lang: str = DEFAULT, **fields: object) -> str:
    """The string `key` in `lang` (English when that language lacks it), fields filled in.

    An unknown key raises KeyError: a typo must fail in tests, not show users a key name."""
    template = catalogue(lang).get(key)
    if template is None:
        template = catalogue(DEFAULT)[key]
    return template.format(**fields) if fields else template


def say_each(key: str, lang: str = DEFAULT) -> list[str]:
    """The list `key` in `lang` (English when that language lacks it); an unknown key raises KeyError."""
    items = lists(lang).get(key)
    return list(items if items is not None else lists(DEFAULT)[key])


def explain(reason: str, lang: str = DEFAULT) -> str:
    """What a reason code (core/reasons.py) means, in `lang`: the reason line's explanation when
    the stage that refused gave none of its own. Numbers and internals never go here: they stay in
    the decision's `detail` (`/why`, the record)."""
    return say("reason_" + reason.lower(), lang)
