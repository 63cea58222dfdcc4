"""Which sentences of a source may be quoted as an answer.

A sentence of the sources is not an answer when it says back what the asker already said: a line
(nearly) verbatim in the question, such as the error message they pasted, or an error, log or
stack-trace line, which the docs quote to name the problem, not to solve it. Nor is a bare code
fragment (`app = Starlette(debug=True)`, `Proxy("http://127.0.0.1:8081"), httpx.`): without the
sentence around it, it claims nothing a reader can check (a code example is shown by the source
link, not quoted as a claim). All three are decided from the text
alone, so the same question and sources give the same answer.
"""

from __future__ import annotations

import re
from difflib import SequenceMatcher
from functools import lru_cache

_ERROR_LINE = re.compile(
    r"^(?:"
    r"Traceback \(most recent call last\)"  # Python
    r"|File \"[^\"]+\", line \d+"
    r"|(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception|Warning|Exit|Interrupt)(?:\s*\[[^\]\n]*\])?:"  # TypeError: ...
    r"|(?:Uncaught |Unhandled )?Error(?:\s*\[[A-Z0-9_]+\])?:"  # node: "Error [ERR_REQUIRE_ESM]: ..."
    r"|error(?: TS\d+| \[E\d+\])?:"  # tsc, rustc and the like
    r"|(?:npm|yarn|pnpm) (?:ERR!|error)"
    r"|E {2,}\S"  # pytest's failure lines
    r"|at (?:async )?(?:[\w$.<>\[\]]+ )?\(?(?:node:|file:|/|[A-Za-z]:\\)?[^\s()]*:\d+(?::\d+)?\)?$"  # JS stack frame
    r"|\[?\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}"  # a timestamped log line
    r"|\[?(?:DEBUG|INFO|WARN|WARNING|ERROR|CRITICAL|FATAL|TRACE)\]?(?::| -|\s+\[|\s+\d)"  # a levelled log line
    r")"
)
_TOKEN_CODE = re.compile(r"[()\[\]{}=<>;]|[^\W_]_\w|\w\.\w")  # a call, brackets, an operator, a_name, a.name
# words only code is written with, as code writes them (a sentence's "Await" or "None." is prose)
_KEYWORDS = frozenset({"def", "async", "await", "elif", "lambda", "const", "var", "let", "self",
                       "None", "null", "nil", "True", "False", "true", "false"})
_WORD = re.compile(r"\w+")
_EDGE = "\"'`([{<*_.,;:!?)]}>"
ECHO_SHARE = 0.8  # a sentence with this share of its words in runs of the question is said back
ECHO_MIN_WORDS = 4  # a shorter sentence is said back only when it stands in the question whole


def is_error_line(sentence: str) -> bool:
    """An error message, a stack-trace frame or a log line, not a sentence that explains one."""
    return bool(_ERROR_LINE.match(sentence.strip().lstrip("> ")))


def _code_token(token: str) -> bool:
    return bool(_TOKEN_CODE.search(token)) or token in _KEYWORDS


def _prose_word(token: str) -> bool:
    core = token.strip(_EDGE)
    return (not _code_token(token) and any(ch.isalpha() for ch in core)
            and all(ch.isalpha() or ch in "'’-" for ch in core))


def is_code_fragment(sentence: str) -> bool:
    """Code, not a sentence about it: more code than words of prose, or a line that opens with
    code and has fewer than three words of prose ("Use httpx.AsyncClient." is a sentence)."""
    tokens = sentence.split()
    code = [_code_token(t) for t in tokens]
    if not any(code):
        return False
    prose = sum(1 for t in tokens if _prose_word(t))
    return prose * 2 < len(tokens) or (code[0] and prose < 3)


def said_back(sentence: str, question: str) -> bool:
    """The sentence is (nearly) verbatim in the question: most of its words stand there in runs of
    two or more, in its order (a pasted error line, a quoted sentence of the docs)."""
    words = _WORD.findall(sentence.casefold())
    asked, asked_set, asked_text = _asked(question)
    if not words or not asked:
        return False
    if len(words) < ECHO_MIN_WORDS:
        return len(words) >= 2 and f" {' '.join(words)} " in asked_text
    if sum(w in asked_set for w in words) < ECHO_SHARE * len(words):
        return False  # too few of its words are in the question at all
    blocks = SequenceMatcher(None, asked, words, autojunk=False).get_matching_blocks()
    return sum(b.size for b in blocks if b.size >= 2) >= ECHO_SHARE * len(words)


@lru_cache(maxsize=8)
def _asked(question: str) -> tuple[list[str], frozenset[str], str]:
    """The question's words, as a list, a set and a spaced string (a turn checks every sentence against it)."""
    asked = _WORD.findall(question.casefold())
    return asked, frozenset(asked), f" {' '.join(asked)} "


def quotable(sentence: str, question: str) -> bool:
    """The sentence may be quoted as (part of) an answer to `question`."""
    return not (is_error_line(sentence) or is_code_fragment(sentence) or said_back(sentence, question))
