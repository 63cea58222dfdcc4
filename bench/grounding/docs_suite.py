"""The docs suite of the grounding benchmark: groundbot asked about itself, over its bundled docs.

A team's knowledge base of how-to pages, FAQ exports and runbooks is written like docs/: answers
under headings or FAQ questions. Four passes, the default extractive generator:
- `headings`: every section heading of docs/*.md and every FAQ question of docs/faq.yaml, asked
  exactly as written; right when the answer cites that section;
- `paraphrases`: bench/grounding/docs_questions.yaml's newcomer questions whose answer is one section
  (first paraphrase of a section dev, second test); right when the answer cites that section; also
  counted: answers that open with it (their first source is that section: what a user reads first);
- `off_docs`: questions the docs do not answer; right when refused;
- `suggestions`: every distinct suggestion offered with a refusal in the passes before, asked
  back (the text its button stands for); right when answered.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from bench import ROOT
from bench.grounding.harness import Dump, Row, SuiteResult, ask, ingest_kb, run_pass, temp_app
from bot.app import App
from bot.config import Config
from core.messages import Decision
from storage.ingestion.loaders import indexed_part

DOCS = ROOT / "docs"
QUESTIONS = Path(__file__).with_name("docs_questions.yaml")
_HEADING = re.compile(r"^#{2,6}\s+(.+?)\s*$", re.MULTILINE)


@dataclass(frozen=True)
class Asked:
    question: str
    file: str = ""     # the docs file whose section answers it ('' = none does)
    heading: str = ""  # that section's heading (an FAQ question for faq.yaml)
    split: str = ""


def doc_sections(docs: Path = DOCS) -> list[Asked]:
    """Every section heading of the Markdown docs and every FAQ question, as (file, heading)."""
    pairs = [(p.name, h) for p in sorted(docs.glob("*.md"))
             for h in _HEADING.findall(indexed_part(p.read_text("utf-8")))]  # what the index holds
    faq = yaml.safe_load((docs / "faq.yaml").read_text("utf-8"))
    pairs.extend(("faq.yaml", e["question"]) for e in faq.get("faq", []))
    files: dict[str, list[str]] = {}
    for f, h in pairs:  # a heading written in two places ("How do I re-ingest documents?") is answered by either
        files.setdefault(_leaf(h), []).append(f)
    return [Asked(h, "|".join(files[_leaf(h)]), h) for _, h in pairs]


def questions(path: Path = QUESTIONS) -> tuple[list[Asked], list[Asked]]:
    """(paraphrases with their section, off-docs questions), each with its split."""
    data = yaml.safe_load(path.read_text("utf-8"))
    para = [Asked(q, s["file"], s["heading"], "dev" if j == 0 else "test")
            for s in data["sections"] for j, q in enumerate(s["asks"])]
    off = [Asked(q, split="dev" if i % 2 == 0 else "test") for i, q in enumerate(data["off_docs"])]
    return para, off


def _leaf(heading: str) -> str:
    return heading.split(" > ")[-1].strip().lower()


def _cites(sources: Sequence[Any], file: str, heading: str) -> bool:
    """One of `sources` is the section (file and heading); `file` may name several files
    ("a.md|faq.yaml") that hold a section under that same heading."""
    files = set(file.split("|"))
    return any(Path(s.source).name in files and _leaf(s.heading) == _leaf(heading) for s in sources)


def from_section(d: Decision, file: str, heading: str) -> bool:
    """The reply cites the section the question is about."""
    return not d.refused and _cites(d.sources, file, heading)


def led_by_section(d: Decision, file: str, heading: str) -> bool:
    """The reply opens with the section asked about: its first source, the one its first quoted
    sentence cites, is that section."""
    first = sorted(d.sources, key=lambda s: s.number)[:1]
    return not d.refused and _cites(first, file, heading)


def _row(app: App, name: str, tag: str, expected: str, offered: dict[str, str]) -> Any:
    def row(i: int, a: Asked) -> Row:
        d = ask(app, name, tag, i, a.question)
        for s in d.suggestions if d.refused else []:
            offered.setdefault(s.text, a.question)
        right = from_section(d, a.file, a.heading) if a.file else (d.refused if expected == "refuse" else not d.refused)
        return Row(name, tag, i, a.question, expected, d, split=a.split,
                   extra={"section": f"{a.file} / {a.heading}" if a.file else "", "right": right,
                          "led": led_by_section(d, a.file, a.heading) if a.file else right,
                          "cited": [f"{Path(s.source).name} / {_leaf(s.heading)}" for s in d.sources],
                          "suggestions": [s.text for s in d.suggestions]})
    return row


def _share(rows: Sequence[Row], split: str = "", key: str = "right") -> float:
    rs = [r for r in rows if not split or r.split == split]
    return round(sum(bool(r.extra[key]) for r in rs) / len(rs), 4) if rs else 0.0


def run_docs(config: Config, *, embedder: Any = None, limit: int | None = None,
             dump: Dump | None = None) -> SuiteResult:
    """The four passes of the module docstring over a fresh index of docs/."""
    name = "docs"
    t0 = time.perf_counter()
    result = SuiteResult(name)
    para, off = questions()
    heads = doc_sections()
    if limit is not None:
        para, off, heads = para[:limit], off[:limit], heads[:limit]
    result.notes.append(f"generator=extractive; KB = docs/ ({len(heads)} sections and FAQ questions); questions: "
                        f"{QUESTIONS.relative_to(ROOT)} ({len(para)} paraphrases, {len(off)} off-docs); "
                        "a right answer cites the section asked about")
    offered: dict[str, str] = {}
    with temp_app(config.changed(generator__kind="extractive"), embedder=embedder, prefix=name) as app:
        ingest_kb(app, DOCS, result)
        for tag, expected, items in (("headings", "reply", heads), ("paraphrases", "reply", para),
                                     ("off_docs", "refuse", off)):
            result.passes.append(run_pass(app, name, tag, expected, items, _row(app, name, tag, expected, offered), dump))
        sugg = [Asked(s) for s in sorted(offered)]
        result.passes.append(run_pass(app, name, "suggestions", "reply", sugg,
                                      _row(app, name, "suggestions", "reply", offered), dump))
    heads_p, para_p, off_p, sugg_p = result.passes
    result.metrics = {
        "headings_answered_from_section": _share(heads_p.rows),
        "paraphrases_answered_from_section": _share(para_p.rows),
        "paraphrases_answered_from_section_dev": _share(para_p.rows, "dev"),
        "paraphrases_answered_from_section_test": _share(para_p.rows, "test"),
        "paraphrases_led_by_section": _share(para_p.rows, key="led"),
        "paraphrases_led_by_section_dev": _share(para_p.rows, "dev", key="led"),
        "paraphrases_led_by_section_test": _share(para_p.rows, "test", key="led"),
        "off_docs_refused": _share(off_p.rows),
        "off_docs_refused_dev": _share(off_p.rows, "dev"),
        "off_docs_refused_test": _share(off_p.rows, "test"),
        "suggestions_offered": len(sugg_p.rows),
        "suggestions_refused_when_asked": sum(r.decision.refused for r in sugg_p.rows),
    }
    result.seconds = time.perf_counter() - t0
    return result
