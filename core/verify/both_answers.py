"""Check "yes, both" answers to "Are A and B both X?" against what the evidence says of each.

"Yes, both airports are in California" is made of words the evidence holds, if it says
California of one airport only. An answer that affirms something of both A and B is
supported only when the evidence says the words it adds ("California") of A and,
separately, of B. An answer that adds no words is left to the check of a bare "yes".
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from core.text.lexicon import AUXILIARIES, content_terms
from core.text.normalize import normalize_text, words
from core.verify.compare import _trim, option_passages
from core.verify.features import NEGATIONS

_PAIR = re.compile(r"^\W*(?:\w+\s+)?(?:both\s+)?(?:the\s+)?(.+?)\s+and\s+(?:the\s+)?(.+)$", re.IGNORECASE)
_JOINT = frozenset(["both", "same", "each", "all"])
SHARE = 0.5  # at least this share of the checked words must be said of each option


@dataclass(frozen=True)
class BothVerdict:
    options: tuple[str, str]
    checked: tuple[str, ...]  # the words that must be said of each option
    supported: bool
    note: str


def pair(question: str) -> tuple[str, str] | None:
    """A and B of a yes/no question about two things ("Are A and B both ...?"), cut to their names."""
    q = question.strip().rstrip("?").strip()
    first = q.split(" ", 1)[0].lower()
    if first not in AUXILIARIES or normalize_text(q).count(" and ") != 1:
        return None
    m = _PAIR.match(q)
    if not m:
        return None
    left, right = _trim(m.group(1), from_end=True), _trim(m.group(2), from_end=False)
    if not content_terms(left) or not content_terms(right):
        return None
    return left, right


def _affirms_both(claim: str) -> bool:
    tokens = words(normalize_text(claim))
    if not tokens or NEGATIONS.intersection(tokens):
        return False
    return tokens[0] == "yes" or bool(_JOINT.intersection(tokens))


def check_both(question: str, claim: str, sentences: Sequence[str]) -> BothVerdict | None:
    """A verdict when the claim affirms something of both options of a yes/no question."""
    opts = pair(question)
    if opts is None or not _affirms_both(claim):
        return None
    names = set(content_terms(opts[0])) | set(content_terms(opts[1]))
    asked = set(content_terms(question))
    checked = set(content_terms(claim)) - asked - names - _JOINT - {"yes"}
    if not checked:
        return None  # nothing added: the question's own words are checked as for a bare "yes"
    about = option_passages(opts, sentences)
    shares = [len(checked & about[i]) / len(checked) for i in (0, 1)]
    ok = min(shares) >= SHARE
    note = (f"the evidence says {len(checked & about[0])}/{len(checked)} of "
            f"'{' '.join(sorted(checked))}' of {opts[0]}, {len(checked & about[1])}/{len(checked)} of {opts[1]}")
    return BothVerdict(opts, tuple(sorted(checked)), ok, note)
