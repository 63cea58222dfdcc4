"""Names and numbers must sit where the evidence says what the claim says about them.

The commonest hallucination a word check passes: the right passage, with one of its names or
numbers put where another belongs ("recorded by Elvis Presley in 1949" when the passage says
1960 and mentions 1949 elsewhere). Every word of such a claim is in the evidence, so each of
its names and numbers is also checked in place, two ways:
- in its sentence (`misplaced`): the evidence sentence sharing most of the claim's other words
  is where the claim comes from, and a sentence that holds the token must share at least
  `ratio` of that (words weighted by how rare they are among the evidence sentences);
- next to its words (`out_of_context`): the nearest content word before or after the token in
  the claim (other names and numbers skipped) must also stand within a few words of the token
  somewhere in the evidence, when the evidence uses that word at all ("opened the Wall in August
  1989" is not stated by "... in November 1989 ... in August"). A neighbour the claim lists
  beside the token ("HTML and PDF", "plain text, HTML") is another item of a list, not what the
  claim says of the token: the evidence need only hold both in one sentence, however it lists
  them ("HTML pages saved as files (`.html`, `.htm`), PDF files").
Tokens the question names are not checked (they say what the claim is about, not what it
says), nor a token the evidence holds only in a title or heading.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Collection, Sequence

from core.text.lexicon import STOP, content_terms
from core.text.names import critical_tokens, fold
from core.text.normalize import normalize_text, words
from core.verify.features import Sentence, present

_LISTED = re.compile(r"(\w+)(?=\s*(?:[,;/]\s*(?:(?:and|or)\s+)?|\s+(?:and|or|nor)\s+)(\w+))")
SPAN = 3  # words either side of a token in the claim that count as next to it
REACH = 6  # how far from the token that word may stand in the evidence (it may word things differently)


def anchors(claim: str) -> list[str]:
    """The claim's numbers and names, a capitalised word that opens it included ("Hawaiian is the
    highest peak"): only those the evidence holds are checked, so a capital that merely opens a
    sentence costs nothing."""
    opening = [w.strip(".,;:!?\"'()") for w in claim.split()[:1]]
    extra = [w for w in opening if w[:1].isupper() and normalize_text(w) not in STOP and len(w) > 1]
    return list(dict.fromkeys(critical_tokens(claim) + [normalize_text(w) for w in extra]))


def _folded(text: str) -> list[str]:
    return [fold(w) for w in words(normalize_text(text))]


def _checked(claim: str, question: str, body: Sequence[Sentence]) -> list[tuple[str, list[int]]]:
    """(token, indices of the body sentences holding it) for each token to check."""
    asked = set(_folded(question))
    out = []
    for token in anchors(claim):
        if set(_folded(token)) & asked or (len(token) <= 2 and not token.isdigit()):  # "Dr", "St"
            continue
        parts = _folded(token) or [token]
        holding = [i for i, s in enumerate(body) if all(present(w, set(s.tokens)) for w in parts)]
        if holding:
            out.append((token, holding))
    return out


def misplaced(claim: str, question: str, sentences: Sequence[Sentence], ratio: float,
              labels: Collection[str] = ()) -> list[str]:
    """The claim's names and numbers the evidence holds only in sentences that share little of
    what the claim says, compared with the sentence that shares most. `labels` are the titles and
    headings among `sentences`: what the chunks are about, not what they say."""
    body = [s for s in sentences if s.text not in labels]
    if ratio <= 0 or len(body) < 2:
        return []
    df: Counter[str] = Counter(t for s in body for t in s.terms)

    def weight(terms: set[str]) -> float:
        return sum(math.log(1.0 + len(body) / df[t]) for t in terms if df[t])

    names = {t for a in anchors(claim) for t in content_terms(a)}
    rest = set(content_terms(claim)) - names  # what the claim says of its names and numbers
    out: list[str] = []
    for token, holding in _checked(claim, question, body):
        shared = [weight(rest & s.terms) for s in body]
        best = max(shared)
        # a sentence that opens with a pronoun speaks of the name in the sentence before it
        near = set(holding) | {i + 1 for i in holding if i + 1 < len(body) and _refers_back(body[i + 1].text)}
        if best > 0 and max(shared[i] for i in near) < ratio * best:
            out.append(token)
    return out


_PRONOUNS = frozenset(["it", "its", "he", "she", "they", "his", "her", "their", "them", "this", "these", "there"])


def _refers_back(sentence: str) -> bool:
    first = _folded(sentence)[:1]
    return bool(first) and first[0] in _PRONOUNS


def _group(seq: list[str], i: int, names: set[str]) -> tuple[int, int]:
    """The run of name words around position i ("upper east side"); a number stands alone, so
    "August 1989" is a month beside a year."""
    if seq[i].isdigit():
        return i, i
    first, last = i, i
    while first > 0 and seq[first - 1] in names and not seq[first - 1].isdigit():
        first -= 1
    while last + 1 < len(seq) and seq[last + 1] in names and not seq[last + 1].isdigit():
        last += 1
    return first, last


def _beside(seq: list[str], first: int, last: int) -> set[str]:
    """The nearest content word (a name or number too) before `first` and after `last`, within SPAN words."""
    left = [w for w in seq[max(0, first - SPAN) : first] if w not in STOP][-1:]
    right = [w for w in seq[last + 1 : last + 1 + SPAN] if w not in STOP][:1]
    return set(left + right)


def listed_pairs(claim: str) -> set[frozenset[str]]:
    """Pairs of words the claim lists side by side: joined by a comma, a semicolon, a slash,
    "and" or "or" ("Markdown, plain text, HTML and PDF")."""
    text = normalize_text(claim)
    return {frozenset((fold(m.group(1)), fold(m.group(2)))) for m in _LISTED.finditer(text)}


def _found(want: set[str], listed: set[str], parts: set[str], holding: Sequence[int], body: Sequence[Sentence]) -> bool:
    """Whether one of the evidence's places of the token has a wanted neighbour near it, or a
    listed one anywhere in its sentence."""
    for i in holding:
        text = _folded(body[i].text)
        if listed & set(text):
            return True
        for k in (k for k, w in enumerate(text) if w in parts):
            if want & set(text[max(0, k - REACH) : k + REACH + 1]):
                return True
    return False


def out_of_context(claim: str, question: str, sentences: Sequence[Sentence], labels: Collection[str] = ()) -> list[str]:
    """The claim's names and numbers none of whose places in the evidence has the claim's
    neighbouring words within SPAN words of it (a listed neighbour: in the same sentence)."""
    seq = _folded(claim)
    pairs = listed_pairs(claim)
    body = [s for s in sentences if s.text not in labels]
    names = {w for a in anchors(claim) for w in _folded(a)}
    said = {w for s in body for w in _folded(s.text)}
    out: list[str] = []
    for token, holding in _checked(claim, question, body):
        parts = set(_folded(token))
        at = [i for i, w in enumerate(seq) if w in parts]
        if not at:
            continue
        first, last = _group(seq, at[0], names)
        # only neighbours the evidence uses at all: a paraphrase's own words prove nothing either way
        want = (_beside(seq, first, max(last, at[-1])) - parts) & said
        if not want:
            continue
        listed = {w for w in want if any(frozenset((w, p)) in pairs for p in parts)}
        if not _found(want, listed, parts, holding, body):
            out.append(token)
    return out
