"""Split text into sentences and answers into claims, each claim with the [C#] citations it
carries (read by core/text/citations.py, as every other reader of a marker reads them)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from core.text.citations import PATTERN, cited, has_marker, strip_markers
from core.text.lexicon import content_terms

_BULLET = re.compile(rf"^\s*(?:[-*•·]|\d{{1,2}}((?:\s*{PATTERN})*)[.)])\s+")  # "1[C2]. " keeps its citation
_ABBREV = re.compile(r"(?:\b(?:e\.g|i\.e|etc|vs|mr|mrs|ms|dr|st|no|jr|sr|inc|ltd|co|fig|approx)|\b[A-Z])\.$", re.IGNORECASE)
_NO = re.compile(r"\bno\.$", re.IGNORECASE)  # "No. 5" is "number 5"; "No. Martin has published five" answers no
_SENT_END = re.compile(r"(?<=[.!?؟。])[\"'”’)\]]*\s+")
# A full stop with no space after it ends a sentence only where two sentences were glued together
# ("in 1990.The", "(see below).Then", "really?No"), never in a dotted name ("httpx.Client()",
# "requests.Session", "jinja2.Environment", "mkdocs.yml"), however prose-like its two halves are:
# `_glued_at` decides by what stands before the mark.
_GLUED = re.compile(r"(?<=[.!?])(?=[A-Z][a-z]+(?![\w(\[]|\.\w))")
_BEFORE_GLUE = re.compile(r"(?:(?<![\w.])\d+|[)\]\"”’]|[^\W\d_]+(?=[!?]))[.!?]$")
# Text no sentence ends inside: inline code spans (`a.b`, ``x. y``) and URLs.
_PROTECTED = re.compile(r"(`+)[^`\n].*?\1|(?<![\w@])(?:https?|ftp)://[^\s<>\"'`]+[^\s<>\"'`.,;:!?)\]]")
_LEAD_IN = re.compile(
    r"^(?:according to|based on|as stated in) (?:the )?(?:provided )?(?:context|sources?|documents?|passages?)[\s,:]+",
    re.IGNORECASE,
)
_BOILERPLATE = re.compile(
    r"^(?:(?:according to|based on|from) (?:the )?(?:provided )?(?:context|sources?|documents?|passages?|knowledge base)[\s,:]*"
    r"|(?:i hope (?:this|that) helps|let me know if .*|sources?|references?|here is .*answer|in summary|answer)[\s.!:]*)$",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Claim:
    text: str  # claim without citation markers
    raw: str  # claim as written
    citations: tuple[int, ...]


def _bulleted(line: str) -> str:
    """A bullet's text without its marker; a citation glued to a number ("1[C2]. Raise standards:
    ...") goes to the end of the item's first sentence, which it stands for."""
    m = _BULLET.match(line)
    rest = line[m.end() :].strip() if m else line.strip()
    cites = (m.group(1) or "").strip() if m else ""
    if not cites:
        return rest
    end = _SENT_END.search(rest)
    cut = end.start() if end else len(rest)
    body = rest[:cut].rstrip()
    if set(cited(cites)) <= set(cited(body)):
        return rest
    stop = body[-1:] if body[-1:] in ".!?" else ""
    return f"{body[: len(body) - len(stop)]} {cites}{stop}{rest[cut:]}"


def _logical_lines(text: str) -> list[str]:
    """Join hard-wrapped lines of a paragraph; bullets and blank lines start new ones."""
    out: list[str] = []
    joinable = False
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            joinable = False
            continue
        if _BULLET.match(raw) or line.startswith(("#", "|", "```")):
            out.append(_bulleted(raw))
            joinable = not line.startswith(("#", "|", "```"))
            continue
        if joinable and out:
            out[-1] = f"{out[-1]} {line}"
        else:
            out.append(line)
        joinable = True
    return out


def split_sentences(text: str) -> list[str]:
    """Sentences of a passage; paragraphs and bullets are boundaries too."""
    return list(_sentences(text))


def _abbreviation(piece: str, after: str) -> bool:
    """The full stop ending `piece` closes an abbreviation, not a sentence ("e.g.", "Dr."); "No."
    abbreviates "number" only before a digit ("No. 5"), else it is the answer word."""
    if _NO.search(piece):
        return after[:1].isdigit()
    return bool(_ABBREV.search(piece))


def _unglued(line: str) -> str:
    """`line` with a space where two sentences were glued ("in 1990.The"), outside code spans and URLs."""
    protected = [m.span() for m in _PROTECTED.finditer(line)]
    cuts = [m.start() for m in _GLUED.finditer(line)
            if _BEFORE_GLUE.search(line, 0, m.start()) and not any(a < m.start() < b for a, b in protected)]
    for cut in reversed(cuts):
        line = f"{line[:cut]} {line[cut:]}"
    return line


@lru_cache(maxsize=4096)
def _sentences(text: str) -> tuple[str, ...]:
    """Cached: a turn splits the same retrieved passages in its generator and for every claim."""
    out: list[str] = []
    for line in _logical_lines(text):
        line = _unglued(line)
        protected = [m.span() for m in _PROTECTED.finditer(line)]
        start = 0
        for m in _SENT_END.finditer(line):
            if any(a < m.start() < b for a, b in protected):
                continue  # "`x. Y`" and a URL are one token of their sentence
            piece = line[start : m.start()].rstrip()
            if _abbreviation(piece, line[m.end() :]):
                continue
            if piece:
                out.append(piece)
            start = m.end()
        rest = line[start:].strip()
        if rest:
            out.append(rest)
    return tuple(out)


def is_boilerplate(text: str) -> bool:
    """Connective text with nothing to verify ("According to the sources:")."""
    stripped = text.strip().strip("*_#>").strip()
    return not content_terms(stripped) or bool(_BOILERPLATE.match(stripped))


_CITED_THEN_CAPITAL = re.compile(r"(?<=[\]】］])\s+(?=[A-Z\"“`(])")


def _pieces(answer: str) -> list[str]:
    """Sentences, also cut after a citation that a capital follows ("... (see below); [C1] When
    ..."): a quoted passage that ends without a full stop is still a claim of its own."""
    out: list[str] = []
    for sentence in split_sentences(answer):
        start = 0
        for m in _CITED_THEN_CAPITAL.finditer(sentence):
            if has_marker(sentence[start : m.start()]):
                out.append(sentence[start : m.start()].strip())
                start = m.end()
        out.append(sentence[start:].strip())
    return [p for p in out if p]


def split_claims(answer: str) -> list[Claim]:
    """Claims of an answer: sentences and bullets, boilerplate dropped.

    A citation that stands alone after a sentence ("... done. [C2]") belongs to
    the sentence before it.
    """
    claims: list[Claim] = []
    for sentence in _pieces(answer):
        cites = tuple(cited(sentence))
        text = _LEAD_IN.sub("", strip_markers(sentence))
        if not content_terms(text):
            if cites and claims:
                last = claims[-1]
                claims[-1] = Claim(last.text, last.raw + " " + sentence, last.citations + cites)
            continue
        if is_boilerplate(text):
            continue
        claims.append(Claim(text=text, raw=sentence, citations=cites))
    if not claims:
        # a bare "Yes." or "No [C1]." is still an answer: it is checked together with its question
        bare = strip_markers(answer)
        if any(ch.isalnum() for ch in bare):
            claims.append(Claim(text=bare, raw=answer.strip(), citations=tuple(cited(answer))))
    return claims
