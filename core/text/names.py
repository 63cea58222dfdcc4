"""Proper names and numbers: the one place that decides what a name is.

`critical_tokens` lists the numbers and single name words that must appear exactly in the
evidence; `name_runs` the names of several words, which must appear together. core/verify/
compare.py reads option names with `is_name_word`.

Multi-word names must appear together in the evidence, not word by word.

Checking each capitalised word on its own lets "University of Texas" pass on a passage that
says "University Park, Texas": both words are there, the name is not. A name of two or more
words counts as present when its words occur in that order in one evidence sentence (or in
the question), with at most GAP other words between neighbours, so "Carlos Bacca" still
matches "Carlos Arturo Bacca Ahumada" while "Montreal Circuit" does not match "Circuit
Gilles Villeneuve in Montreal".
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from functools import lru_cache

from core.text.lexicon import STOP
from core.text.normalize import normalize_text

GAP = 2  # other words allowed between two words of a name ("Carlos [Arturo] Bacca")
_TOKEN = re.compile(r"[^\W_]+(?:['’][^\W_]+)*", re.UNICODE)
_CONNECTORS = frozenset(["of", "de", "la", "le", "du", "da", "di", "del", "der", "den", "von", "van", "y", "&"])
_BREAK = re.compile(r"[,;:()\[\]\"“”!?/|]")
_ABBREVIATION = 3  # "St." and "Jr." end with a period inside a name; longer words end a sentence


_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_NAME = re.compile(r"\b[A-Z][\w'’-]*")
_SENT_START = re.compile(r"(?:^|[.!?:]\s+|\n\s*)$")


def fold(token: str) -> str:
    """Accent- and possessive-insensitive form for exact-token checks (Zürich = Zurich, Kingdom's = Kingdom)."""
    token = token.removesuffix("'s").removesuffix("’s")
    if token.isascii():  # nothing to decompose
        return token
    decomposed = unicodedata.normalize("NFKD", token)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def is_name_word(word: str) -> bool:
    """A word written as a name: capitalised."""
    return word[:1].isupper()


def critical_tokens(text: str) -> list[str]:
    """Numbers and proper names that must appear exactly in the evidence.

    A capitalised word that merely starts a sentence ("Put the token ...") is not taken
    for a name unless the next word is capitalised too ("Matt Damon") or it is an acronym.
    """
    found = [m.group(0) for m in _NUMBER.finditer(normalize_text(text))]
    for m in _NAME.finditer(text):
        raw = m.group(0)
        word = normalize_text(raw).strip("'’-")
        if not word or word in STOP or len(word) <= 1:
            continue
        if _SENT_START.search(text[: m.start()]) and raw[1:].islower():
            rest = text[m.end() :].lstrip()
            if not is_name_word(rest):
                continue
        found.append(word)
    return found


def tokens(text: str) -> list[str]:
    """Folded word tokens of a text, in order."""
    return [fold(m.group(0).casefold()) for m in _TOKEN.finditer(unicodedata.normalize("NFC", text))]


@lru_cache(maxsize=4096)
def segments(text: str) -> tuple[tuple[str, ...], ...]:
    """Token lists of the text's pieces between commas, brackets and quotes: a name never
    spans them, so "University Park, Texas" does not hold "University of Texas"."""
    return tuple(tuple(t) for piece in _BREAK.split(text) if (t := tokens(piece)))


def _joined(gap: str, previous: str) -> bool:
    """May the text between two capitalised words sit inside one name?"""
    if _BREAK.search(gap):
        return False
    return "." not in gap or len(previous) <= _ABBREVIATION


def name_runs(text: str) -> list[list[str]]:
    """Runs of two or more capitalised words ("Circuit Gilles Villeneuve", "University of
    Texas"), folded; lowercase connectors only inside a run, stop words trimmed at its ends.
    A run that opens the text may start with a word capitalised only for that ("While Jane")."""
    text = unicodedata.normalize("NFC", text)
    found = list(_TOKEN.finditer(text))
    runs: list[list[str]] = []
    run: list[str] = []
    pending: list[str] = []  # connectors seen after the run's last name word
    for i, m in enumerate(found):
        word = m.group(0)
        gap = text[found[i - 1].end() : m.start()] if i else ""
        if run and not _joined(gap, found[i - 1].group(0)):
            runs.append(run)
            run, pending = [], []
        if is_name_word(word):
            run.extend(pending)
            run.append(fold(word.casefold()))
            pending = []
        elif run and word.casefold() in _CONNECTORS:
            pending.append(word.casefold())
        elif run:
            runs.append(run)
            run, pending = [], []
    if run:
        runs.append(run)
    out: list[list[str]] = []
    for r in runs:
        while r and (r[0] in STOP or r[0] in _CONNECTORS):
            r = r[1:]
        while r and (r[-1] in STOP or r[-1] in _CONNECTORS) and r[-1] != "i":  # "World War I" keeps its I
            r = r[:-1]
        if sum(1 for t in r if t not in _CONNECTORS) >= 2:
            out.append(r)
    return out


def _same(a: str, b: str) -> bool:
    """One word, allowing a short suffix ("Korea" / "Korean", "Texas" / "Texans")."""
    if a == b:
        return True
    short, long_ = sorted((a, b), key=len)
    return len(short) >= 4 and long_.startswith(short) and len(long_) - len(short) <= 2


def occurs(name: Sequence[str], text_tokens: Sequence[str]) -> bool:
    """The name's words in order in `text_tokens`, at most GAP words apart (connectors optional)."""
    words = [t for t in name if t not in _CONNECTORS]
    for start, tok in enumerate(text_tokens):
        if not _same(tok, words[0]):
            continue
        pos, ok = start, True
        for w in words[1:]:
            nxt = next((j for j in range(pos + 1, min(pos + 2 + GAP, len(text_tokens)))
                        if _same(text_tokens[j], w)), None)
            if nxt is None:
                ok = False
                break
            pos = nxt
        if ok:
            return True
    return False


def unmatched_names(claim: str, question: str, evidence: Iterable[str]) -> list[str]:
    """Multi-word names of the claim that neither the question nor any one evidence sentence holds."""
    runs = name_runs(claim)
    if not runs:
        return []
    texts = [seg for text in (question, *evidence) for seg in segments(text)]
    first = tokens(claim)[:1]

    def held(run: list[str]) -> bool:
        if any(occurs(run, t) for t in texts):
            return True
        rest = [t for t in run[1:] if t not in _CONNECTORS]
        opens = run[:1] == first
        return opens and (len(rest) < 2 or any(occurs(run[1:], t) for t in texts))

    return [" ".join(r) for r in runs if not held(r)]
