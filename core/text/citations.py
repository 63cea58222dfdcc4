"""The [Cn] citation marker, read and written in one place.

A generator cites the numbered chunks it was given as `[C1]`, `[C2][C3]` or `[C1, C3]`; an LLM also
writes `[c2]`, `[C 4]` or fullwidth `【C1】`. The verifier, the renderer, the turn record, the
review desk and the term selector all read a marker here, so they agree on which numbers an answer
cites: a marker read one way for verification and another for display or the record would show
users (or an admin) an answer other than the one checked. Users read a marker as `[n]`, the number
of its line in the sources list (`for_display`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

# one marker: "[C1]", "[C1, C3]", "[C1;C2]", "[c2]", "[C 4]", "【C1】", "［C1］" (a list may drop the later
# Cs); a pattern other patterns may hold ("1[C2]. " opening a list item), with no group of its own
PATTERN = r"(?i:[\[【［]\s*C\s*\d+(?:\s*[,;]\s*C?\s*\d+)*\s*[\]】］])"
_MARKER = re.compile(PATTERN)
_SHOWN = re.compile(rf"{PATTERN}|\[\d+\]")  # also a marker as users read it: "[2]"
_NUMBER = re.compile(r"\d+")
_STRIP = re.compile(rf"[ \t]*{PATTERN}")  # the blanks before a marker go with it: "done [C1]." -> "done."
_SPACE_BEFORE_STOP = re.compile(r"\s+([.,;:!?])")


@dataclass(frozen=True)
class Marker:
    """One marker in a text: where it stands and the chunk numbers it cites, in its order."""

    start: int
    end: int
    numbers: tuple[int, ...]


def _marker(m: re.Match[str]) -> Marker:
    return Marker(m.start(), m.end(), tuple(int(n) for n in _NUMBER.findall(m.group(0))))


def markers(text: str, *, shown: bool = False) -> list[Marker]:
    """The markers of `text` in order; with `shown`, also those already rendered for users ("[2]")."""
    return [_marker(m) for m in (_SHOWN if shown else _MARKER).finditer(text)]


def cited(text: str) -> list[int]:
    """Every cited number in order of appearance, repeats kept ([C1] .. [C1, C3] -> 1, 1, 3)."""
    return [n for m in markers(text) for n in m.numbers]


def has_marker(text: str) -> bool:
    return _MARKER.search(text) is not None


def rewrite(text: str, write: Callable[[Marker], str], *, shown: bool = False) -> str:
    """`text` with each marker replaced by what `write` makes of it."""
    return (_SHOWN if shown else _MARKER).sub(lambda m: write(_marker(m)), text)


def strip_markers(text: str) -> str:
    """The text without its markers, as a claim is checked and an FAQ stores an answer: the blanks
    before a marker go with it, and no blank is left before a stop ("done [C1] ." -> "done.")."""
    return _SPACE_BEFORE_STOP.sub(r"\1", _STRIP.sub("", text)).strip()


def for_display(text: str) -> str:
    """Markers as users read them, one bracket a number as the sources list numbers its lines:
    "[C2]" -> "[2]", "[C1, C3]" -> "[1][3]"."""
    return rewrite(text, lambda m: "".join(f"[{n}]" for n in m.numbers))


def marker(*numbers: int) -> str:
    """The marker a generator writes for the chunks `numbers` cite: marker(2) -> "[C2]",
    marker(2, 3) -> "[C2][C3]"."""
    return "".join(f"[C{n}]" for n in numbers)
