"""A question that asks when is answered only from a source that says when (the says_when gate).

The passage reader reads whether a passage answers a question's topic; a same-topic passage
that does not say when something happened often passes it ("when was the first accurate world
map made" was answered with a sentence about the Ruysch map's codfish). A chunk that holds no
date, number, time word or condition cannot say when, however close its topic, so when no chunk
the reader trusts has a sentence that does, the gate refuses (`[generator] asks_when`,
NOT_ANSWERED_BY_SOURCES). "When" also asks for a condition ("When does the verifier refuse an
answer?"), so "if", "once" or "when" count. English only: a question in another language is not
held to it.
"""

from __future__ import annotations

import re

_ASKS_WHEN = re.compile(
    r"^(?:when (?:was|were|is|are|did|does|do|will|can|could|has|have|had|would|should)\b"
    r"|(?:in )?(?:what|which) (?:year|date|century|decade|month|day)\b)",
    re.IGNORECASE,
)
_SAYS_WHEN = re.compile(
    r"\d|\b(?:january|february|march|april|may|june|july|august|september|october|november|december"
    r"|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec"
    r"|century|centuries|decades?|years?|months?|weeks?|days?|hours?|minutes?|seconds?|times?"
    r"|today|tonight|yesterday|tomorrow|seasons?|spring|summer|autumn|fall|winter"
    r"|monday|tuesday|wednesday|thursday|friday|saturday|sunday|morning|evening|night"
    r"|ago|since|until|till|during|when|whenever|while|after|before|once|then|now|if|unless"
    r"|era|period|age|reign|dynasty|daily|weekly|monthly|annually|yearly|early|earlier|late|later"
    r"|first|last|recently|soon|always|never)\b",
    re.IGNORECASE,
)


def asks_when(question: str) -> bool:
    """The question opens by asking when ("When did ...", "In what year ...")."""
    return bool(_ASKS_WHEN.match(question.strip()))


def says_when(text: str) -> bool:
    """The text holds a date, a number, a time word or a condition."""
    return bool(_SAYS_WHEN.search(text))
