"""Check the pick in "A or B?" questions against what the evidence says of each option.

Lexical support cannot tell "A was born first" from "B was born first", or "A is native
to South America" from "B is native to South America": both are made of the passage's
words. The evidence can: it dates each option, and it says the question's predicate of
one option and not of the other.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from core.text.lexicon import AUXILIARIES, content_terms
from core.text.names import is_name_word

_EARLY = re.compile(r"\b(first|earlier|earliest|older|oldest|before|sooner)\b", re.IGNORECASE)
_LATE = re.compile(r"\b(younger|youngest|later|latest|newer|newest|more recent|most recent)\b", re.IGNORECASE)
_YEAR = re.compile(r"(?<![\d.,])(1[0-9]{3}|20[0-9]{2})(?![\d])")  # "1936June 6" still dates 1936


@dataclass(frozen=True)
class ComparisonVerdict:
    options: tuple[str, str]
    expected: str  # the option the evidence makes the answer
    picked: str
    note: str  # what the evidence says of each option, for the claim map
    @property
    def agrees(self) -> bool:
        return self.expected == self.picked


_CONNECTORS = frozenset(["of", "the", "for", "and", "de", "la", "le", "von", "van", "del", "da", "di", "y", "&", "-"])


def _is_name_word(word: str) -> bool:
    """A word of an option's name: a name word (core/text/names.py), a number or a quote."""
    return is_name_word(word) or word[:1].isdigit() or word[:1] in "\"“'("


def _name_run(words: list[str]) -> list[str]:
    """The leading run of name words ("MedStar Washington Hospital Center the largest ..."),
    with lowercase connectors kept only inside it ("First for Women")."""
    run: list[str] = []
    for i, w in enumerate(words):
        if _is_name_word(w) or w.lower() in _CONNECTORS and run and i + 1 < len(words) and _is_name_word(words[i + 1]):
            run.append(w)
        else:
            break
    return run


def _trim(option: str, from_end: bool) -> str:
    """An option written into the sentence ("Is A or B the largest ...") cut down to its name.
    Options without lowercase words, or that are not names at all, are kept as written."""
    words = option.split()
    if not any(w[0].islower() and w.lower() not in _CONNECTORS for w in words if w):
        return option
    run = _name_run(words[::-1])[::-1] if from_end else _name_run(words)
    return " ".join(run) if run else option


_BETWEEN = re.compile(r"\bbetween\s+(?:the\s+)?(.+?)\s+and\s+(?:the\s+)?(.+?)\s*,\s*(?:which|who|what)\b", re.IGNORECASE)


def options(question: str) -> tuple[str, str] | None:
    """The two options of an "A or B" (or "Between A and B, which ...") question, as written."""
    q = question.strip().rstrip("?").strip()
    between = _BETWEEN.search(q)
    if between and " or " not in q.lower():
        left, right = _trim(between.group(1), from_end=True), _trim(between.group(2), from_end=False)
        return (left, right) if content_terms(left) and content_terms(right) else None
    if q.lower().count(" or ") != 1:
        return None
    left, right = re.split(r"\s+or\s+", q, maxsplit=1, flags=re.IGNORECASE)
    right = re.split(r"[,;:?]", right)[0].strip()
    left = re.split(r"[,;:]", left)[-1].strip()
    first, _, rest = left.partition(" ")
    if first.lower() in AUXILIARIES and rest:
        left = rest  # "Is A or B ...?", "Was A or B ...?"
    for word in ("first", "earlier", "older", "younger", "later"):
        left = re.sub(rf"^.*\b{word}\b\s*", "", left, flags=re.IGNORECASE) if re.search(rf"\b{word}\b", left, re.I) else left
    left, right = _trim(left, from_end=True), _trim(right, from_end=False)
    if not content_terms(left) or not content_terms(right):
        return None
    return left, right


def _mentions(option_terms: set[str], sentence_terms: set[str]) -> bool:
    return bool(option_terms) and len(option_terms & sentence_terms) / len(option_terms) >= 0.6


_PAREN = re.compile(r"\(([^()]*)\)")


def _year(option: str, sentences: Sequence[str]) -> int | None:
    """The option's year: a year in brackets after its name ("(born 1991)", "(1844–1846)") first."""
    terms = set(content_terms(option))
    for s in sentences:
        if not _mentions(terms, set(content_terms(s))):
            continue
        for group in _PAREN.findall(s):
            m = _YEAR.search(group)
            if m:
                return int(m.group(1))
        m = _YEAR.search(s)
        if m:
            return int(m.group(1))
    return None


_NEGATED = re.compile(r"\b(not|never|neither|nor|no)\b|n't", re.IGNORECASE)
_RELATION = re.compile(r"\b(than|before|after)\b", re.IGNORECASE)


def _direction(text: str) -> int:
    """+1 for "earlier/older/before" wording, -1 for "later/younger/after", 0 for neither or both."""
    early = bool(_EARLY.search(text))
    late = bool(_LATE.search(text)) or bool(re.search(r"\bafter\b", text, re.IGNORECASE))
    return int(early) - int(late)


def _without(text: str, opts: tuple[str, str]) -> str:
    """The text with the options' names removed ("First for Women" says nothing about time)."""
    for o in opts:
        text = re.sub(re.escape(o), " ", text, flags=re.IGNORECASE)
    return text


def picked_option(opts: tuple[str, str], answer: str, question: str = "") -> str | None:
    """The option the answer picks (None when it names neither, or both without saying which).

    "A was born before B" names both and picks A; "A was born after B", asked who came first, picks B.
    """
    answer_terms = content_terms(answer)
    names = [set(content_terms(o)) for o in opts]
    if names[0] - names[1] and names[1] - names[0]:
        names = [names[0] - names[1], names[1] - names[0]]  # "Miss Universe or Miss Perú": "Miss" tells nothing
    hits = [len(n & set(answer_terms)) / max(1, len(n)) for n in names]
    if max(hits) < 0.5:
        return None
    if hits[0] != hits[1] and min(hits) < 0.5:
        return opts[0] if hits[0] > hits[1] else opts[1]
    if min(hits) < 0.5 or _NEGATED.search(answer) or not _RELATION.search(answer):
        return None
    first_at = [next((i for i, t in enumerate(answer_terms) if t in n), len(answer_terms)) for n in names]
    if first_at[0] == first_at[1]:
        return None
    subject, other = (0, 1) if first_at[0] < first_at[1] else (1, 0)
    asked, said = (_direction(_without(t, opts)) for t in (question, answer))
    return opts[other] if asked and said and asked != said else opts[subject]


def _check_dates(question: str, opts: tuple[str, str], picked: str,
                 sentences: Sequence[str]) -> ComparisonVerdict | None:
    early, late = bool(_EARLY.search(question)), bool(_LATE.search(question))
    if early == late:
        return None
    years = (_year(opts[0], sentences), _year(opts[1], sentences))
    if years[0] is None or years[1] is None or years[0] == years[1]:
        return None
    earlier = opts[0] if years[0] < years[1] else opts[1]
    later = opts[1] if earlier == opts[0] else opts[0]
    note = f"evidence dates {opts[0]} {years[0]}, {opts[1]} {years[1]}"
    return ComparisonVerdict(opts, earlier if early else later, picked, note)


def option_passages(opts: tuple[str, str], sentences: Sequence[str]) -> tuple[set[str], set[str]]:
    """Content terms of what the evidence says about each option.

    A sentence belongs to the option it names; a sentence naming neither continues the
    option named last ("It is native to ..."); a sentence naming both belongs to both.
    """
    names = [set(content_terms(o)) for o in opts]
    if names[0] - names[1] and names[1] - names[0]:
        names = [names[0] - names[1], names[1] - names[0]]  # "International Airport" names neither
    about: tuple[set[str], set[str]] = (set(), set())
    current: int | None = None
    for s in sentences:
        terms = set(content_terms(s))
        named = [_mentions(names[i], terms) for i in (0, 1)]
        if named[0] and named[1]:
            about[0].update(terms)
            about[1].update(terms)
            current = None
            continue
        if named[0] != named[1]:
            current = 0 if named[0] else 1
        if current is not None:
            about[current].update(terms)
    return about


def _check_predicate(question: str, opts: tuple[str, str], picked: str, sentences: Sequence[str],
                     margin: float) -> ComparisonVerdict | None:
    predicate = set(content_terms(question)) - set(content_terms(opts[0])) - set(content_terms(opts[1]))
    if len(predicate) < 2:
        return None
    about = option_passages(opts, sentences)
    if not about[0] or not about[1]:
        return None  # the evidence does not describe both options
    share = [len(predicate & about[i]) / len(predicate) for i in (0, 1)]
    if abs(share[0] - share[1]) < margin:
        return None
    expected = opts[0] if share[0] > share[1] else opts[1]
    note = (f"the evidence says {len(predicate & about[0])}/{len(predicate)} of the question's terms of "
            f"{opts[0]}, {len(predicate & about[1])}/{len(predicate)} of {opts[1]}")
    return ComparisonVerdict(opts, expected, picked, note)


def check_comparison(question: str, answer: str, sentences: Sequence[str],
                     margin: float = 0.34) -> ComparisonVerdict | None:
    """A verdict when the question asks to choose between two options and the evidence tells
    them apart: by their dates for "which came first" questions, otherwise by which option the
    evidence says the question's predicate of (by at least `margin` of its terms)."""
    opts = options(question)
    if opts is None:
        return None
    picked = picked_option(opts, answer, question)
    if picked is None:
        return None  # the answer names neither option, or both: nothing to compare
    dated = _check_dates(question, opts, picked, sentences)
    if dated is not None or _EARLY.search(question) or _LATE.search(question):
        return dated
    return _check_predicate(question, opts, picked, sentences, margin)
