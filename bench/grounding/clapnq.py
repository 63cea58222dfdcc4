"""CLAPNQ suites of the grounding benchmark: long-form answers, cited sentence by sentence.

`clapnq_llm` replays, through the real openai client, what a competent LLM returns (the
annotators' answer, each sentence cited with the context it rests on) and three ways of getting
it wrong: one sentence of another record's answer added (`added`), another record's whole answer
(`other`), and one name or number swapped for another of the same passage (`swapped`).
`clapnq_extractive` asks the answerable and unanswerable questions of the default extractive
generator. Both ingest all 300 passages (one document each). Split: dev = odd record index
within its file, test = even; every figure is given for all, dev and test.
"""

from __future__ import annotations

import random
import re
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from bench import datasets as ds
from bench.grounding.harness import (
    Dump,
    PassResult,
    Row,
    SuiteResult,
    ask,
    ingest_kb,
    missing,
    norm_answer,
    rank_of,
    recall,
    run_pass,
    temp_app,
)
from bench.grounding.replay_server import CITE, CITE_PREV, ReplayServer
from bot.app import App
from bot.config import Config
from core.messages import Decision
from core.text.lexicon import STOP
from core.text.normalize import clean_input
from core.text.sentences import split_sentences

SPLITS = ("all", "dev", "test")
SHIFT = 37  # the "other" record of record i is (i + SHIFT) % n
MIN_ADDED_WORDS = 6
MODES = ("right", "added", "other", "swapped")
_END = re.compile(r"\s*[.!?]+[\"'”’)\]]*\s*$")
_WORD = re.compile(r"\w+")
_NUMBER = re.compile(r"(?<![\w.,])\d+(?:[.,]\d+)*(?!\w)")
_YEAR = re.compile(r"1\d{3}|20\d{2}")
_NAME_RUN = re.compile(r"[A-Z][\w'’-]*(?:[ \t]+(?:(?:of|van|der|von|de|la|du|da|del|the)[ \t]+)*[A-Z][\w'’-]*)*")
_MONTHS = frozenset({"January", "February", "March", "April", "May", "June", "July", "August", "September",
                     "October", "November", "December"})
_ABBREVIATED = re.compile(r"\.\w")  # "U" of "U.S.", "Ph" of "Ph.D": not a name of its own
_LEADING = re.compile(r"^[\s`'\"“‘(\[]*$")  # only quotes or brackets before it: the sentence start
_NOT_NAMES = frozenset({
    "A", "After", "Also", "An", "And", "As", "At", "Because", "Before", "But", "By", "During", "For", "From", "He",
    "Her", "His", "However", "I", "If", "In",
    "It", "Its", "On", "Or", "She", "So", "The", "Their", "There", "These", "They", "This", "Those", "To", "We", "When",
    "While", "With"})


# -- the replayed answers (pure) -------------------------------------------------------------

def cited(sentence: str, marker: str = CITE) -> str:
    """The sentence with a citation placeholder before its final punctuation."""
    m = _END.search(sentence)
    if not m:
        return f"{sentence.rstrip()} {marker}"
    return f"{sentence[:m.start()].rstrip()} {marker}{m.group(0).strip()}"


def cite_all(sentences: Sequence[str]) -> str:
    return " ".join(cited(s) for s in sentences)


def added_sentence(answers: Sequence[Sequence[str]], i: int) -> tuple[int, str]:
    """(record, sentence): the first sentence of >= MIN_ADDED_WORDS words of record (i + SHIFT) % n,
    or of the records after it when it has none."""
    n = len(answers)
    for k in range(n):
        j = (i + SHIFT + k) % n
        if j == i:
            continue
        for s in answers[j]:
            if len(_WORD.findall(s)) >= MIN_ADDED_WORDS:
                return j, s
    raise ValueError("no record has a sentence long enough to add")


@dataclass(frozen=True)
class Swap:
    sentence: int  # index of the swapped sentence in the answer
    old: str
    new: str
    kind: str  # year, number, month or name
    sentences: tuple[str, ...]  # the answer's sentences after the swap


def _kind(token: str) -> str:
    if token[0].isdigit():
        return "year" if _YEAR.fullmatch(token) else "number"
    return "month" if token in _MONTHS else "name"


def swap_candidates(sentence: str) -> list[tuple[int, int, str]]:
    """(start, end, surface) of the numbers and names of a sentence. A name is a run of
    capitalised words (with "of", "van der" ... inside), without leading stop words, of 3
    characters or more and not an abbreviation's first part; a single capitalised word that
    starts the sentence is not taken for a name."""
    out = [(m.start(), m.end(), m.group(0)) for m in _NUMBER.finditer(sentence)]
    for m in _NAME_RUN.finditer(sentence):
        words = list(re.finditer(r"\S+", m.group(0)))
        while words and words[0].group(0) not in _MONTHS and (words[0].group(0) in _NOT_NAMES
                                                             or words[0].group(0).lower() in STOP):
            words.pop(0)
        if not words:
            continue
        at_start = len(words) == len(m.group(0).split()) and _LEADING.match(sentence[:m.start()])
        start, end = m.start() + words[0].start(), m.start() + words[-1].end()
        surface = " ".join(w.group(0) for w in words)
        if (at_start and len(words) == 1) or len(surface) < 3 or _ABBREVIATED.match(sentence, end):
            continue
        out.append((start, end, surface))
    return sorted(out)


def _occurs(token: str, text: str) -> bool:
    return re.search(rf"(?<!\w){re.escape(token)}(?!\w)", text, re.IGNORECASE) is not None


def _fits(old: str, new: str, answer: str) -> bool:
    if _kind(old) != _kind(new) or new.lower() == old.lower() or _occurs(new, answer):
        return False
    return _kind(old) not in ("name", "month") or not {w.lower() for w in old.split()} & {w.lower() for w in new.split()}


def make_swap(sentences: Sequence[str], passage: str, seed: int) -> Swap | None:
    """One name or number of the answer replaced by another of the same kind from the passage
    that the answer does not hold; None when no such pair exists. Deterministic in `seed`."""
    answer = " ".join(sentences)
    pool = list(dict.fromkeys(c[2] for s in split_sentences(passage) for c in swap_candidates(s)))
    pairs = []
    for k, s in enumerate(sentences):
        for start, end, old in swap_candidates(s):
            options = [new for new in pool if _fits(old, new, answer)]
            if options:
                pairs.append((k, start, end, old, options))
    if not pairs:
        return None
    rng = random.Random(seed)
    k, start, end, old, options = rng.choice(pairs)
    new = rng.choice(options)
    out = list(sentences)
    out[k] = sentences[k][:start] + new + sentences[k][end:]
    return Swap(k, old, new, _kind(old), tuple(out))


def contains_text(answer: str, part: str) -> bool:
    """Whether `part`'s words occur, in order and together, in `answer` (citations, case and
    punctuation ignored)."""
    words = " ".join(_WORD.findall(norm_answer(part)))
    return bool(words) and f" {words} " in f" {' '.join(_WORD.findall(norm_answer(answer)))} "


# -- outcomes ---------------------------------------------------------------------------------

def held(d: Decision) -> bool:
    """Held for a person's review (route hold, NEEDS_REVIEW): the user got no answer yet."""
    return d.route == "hold" or d.state == "pending_review"


def delivered(d: Decision) -> bool:
    """The user got an answer: the generated reply or the template quoting its evidence."""
    return not d.refused and not held(d)


def _rows(p: PassResult, split: str) -> list[Row]:
    return [r for r in p.rows if split == "all" or r.split == split]


def by_split(p: PassResult, key: str, pred: Callable[[Row], bool]) -> dict[str, float | int]:
    """`key`, `key_dev`, `key_test`: the rate of `pred` over the pass's rows of each split."""
    out: dict[str, float | int] = {}
    for split in SPLITS:
        rows = _rows(p, split)
        out[key + ("" if split == "all" else f"_{split}")] = round(sum(map(pred, rows)) / len(rows), 4) if rows else 0.0
    return out


def pass_metrics(p: PassResult) -> dict[str, float | int]:
    """n, delivered, held and refused of a pass, for all, dev and test."""
    m: dict[str, float | int] = {}
    for split in SPLITS:
        m[f"{p.name}_n" + ("" if split == "all" else f"_{split}")] = len(_rows(p, split))
    m |= by_split(p, f"{p.name}_delivered", lambda r: delivered(r.decision))
    m |= by_split(p, f"{p.name}_held", lambda r: held(r.decision))
    m |= by_split(p, f"{p.name}_refused", lambda r: r.decision.refused and not held(r.decision))
    return m


def split_recall(p: PassResult) -> dict[str, float]:
    out: dict[str, float] = {}
    for split in SPLITS:
        out |= recall(_rows(p, split), "" if split == "all" else f"_{split}")
    return out


def _reasons(rows: Sequence[Row]) -> str:
    c = Counter(r.decision.refusal_reason for r in rows if r.decision.refused)
    return ", ".join(f"{k} {v}" for k, v in sorted(c.items(), key=lambda kv: (-kv[1], kv[0]))) or "-"


def table(passes: Sequence[PassResult], measures: dict[str, tuple[str, Callable[[Row], bool]]]) -> list[str]:
    """Markdown rows: every pass by split, with its pass-specific measure and the reasons it was not delivered."""
    lines = ["| pass | split | n | delivered | held | refused | measure | reasons (held or refused) |",
             "|---|---|---:|---:|---:|---:|---|---|"]
    for p in passes:
        for split in SPLITS:
            rows = _rows(p, split)
            n = len(rows) or 1
            label, pred = measures.get(p.name, ("", lambda r: False))
            measure = f"{label} {sum(map(pred, rows)) / n:.3f}" if label else ""
            lines.append(f"| {p.name} | {split} | {len(rows)} | {sum(delivered(r.decision) for r in rows) / n:.3f} "
                         f"| {sum(held(r.decision) for r in rows) / n:.3f} "
                         f"| {sum(r.decision.refused and not held(r.decision) for r in rows) / n:.3f} "
                         f"| {measure} | {_reasons(rows)} |")
    return lines


# -- the suites -------------------------------------------------------------------------------

@dataclass(frozen=True)
class Replay:
    """One answerable record and what the replay LLM answers it with, per mode."""

    record: ds.ClapRecord
    answers: dict[str, str]  # mode -> answer with citation placeholders
    added: tuple[int, str]  # (record, sentence) appended in mode "added"
    other: int  # the record whose answer mode "other" gives
    swap: Swap | None  # None: no name or number could be swapped (no "swapped" answer)


def replays(records: Sequence[ds.ClapRecord]) -> list[Replay]:
    """The four answers of every record (records in file order: position = index)."""
    sents = [split_sentences(r.answer) for r in records]
    out: list[Replay] = []
    for i, r in enumerate(records):
        right = cite_all(sents[i])
        j, extra = added_sentence(sents, i)
        other = (i + SHIFT) % len(records)
        swap = make_swap(sents[i], r.passage, seed=i)
        answers = {"right": right, "added": f"{right} {cited(extra, CITE_PREV)}", "other": cite_all(sents[other])}
        if swap:
            answers["swapped"] = cite_all(swap.sentences)
        out.append(Replay(r, answers, (j, extra), other, swap))
    return out


def _load(folder: Path, name: str) -> tuple[list[ds.ClapRecord], list[ds.ClapRecord]] | SuiteResult:
    files = ds.clapnq_files(folder)
    for path in files.values():
        if not path.is_file():
            return missing(name, path)
    return ds.load_clapnq(files["answerable"], "answerable"), ds.load_clapnq(files["unanswerable"], "unanswerable")


def _kb(app: App, records: Sequence[ds.ClapRecord], result: SuiteResult) -> dict[tuple[str, int], str]:
    kb = app.config.paths.data_dir.parent / "clapnq"
    doc_ids = ds.write_clapnq_kb(records, kb)
    ingest_kb(app, kb, result)
    result.notes.append(f"KB = the passages of all {len(records)} records (answerable and unanswerable), one "
                        "Markdown document each (`# <title>` + passage); split: dev = odd record index, test = even")
    return doc_ids


def _extra(mode: str, p: Replay, d: Decision) -> dict[str, Any]:
    """The dump row's mode-specific fields, and whether the wrong part reached the user."""
    out: dict[str, Any] = {"delivered": delivered(d), "held": held(d)}
    if mode == "added":
        out |= {"added_from": p.added[0], "added_sentence": p.added[1],
                "reaches_user": delivered(d) and contains_text(d.answer, p.added[1])}
    elif mode == "other":
        out |= {"other_record": p.other, "blocked": not delivered(d)}
    elif mode == "swapped" and p.swap:
        out |= {"swap_sentence": p.swap.sentence, "swap_old": p.swap.old, "swap_new": p.swap.new,
                "swap_kind": p.swap.kind, "reaches_user": delivered(d) and contains_text(d.answer, p.swap.new)}
    return out


def _llm_row(app: App, server: ReplayServer, name: str, mode: str,
             doc_ids: dict[tuple[str, int], str]) -> Callable[[int, Replay], Row]:
    def row(i: int, p: Replay) -> Row:
        r = p.record
        server.last = ""
        d = ask(app, name, mode, r.index, r.question)
        doc = doc_ids[("answerable", r.index)]
        return Row(name, mode, r.index, r.question, "reply" if mode == "right" else "refuse", d,
                   given_answer=server.last or None, gold_doc=doc, gold_rank=rank_of(app, r.question, doc),
                   split=r.split, extra=_extra(mode, p, d))

    return row


def _llm_metrics(passes: Sequence[PassResult], asked: Sequence[Replay]) -> dict[str, float | int]:
    by_name = {p.name: p for p in passes}
    m: dict[str, float | int] = {}
    for p in passes:
        m |= pass_metrics(p)
    m |= by_split(by_name["added"], "added_reaches_user", lambda r: bool(r.extra.get("reaches_user")))
    m |= by_split(by_name["swapped"], "swapped_reaches_user", lambda r: bool(r.extra.get("reaches_user")))
    m |= by_split(by_name["other"], "other_blocked", lambda r: not delivered(r.decision))
    m |= {f"right_{k}": v for k, v in split_recall(by_name["right"]).items()}
    for split in SPLITS:
        m["swapped_skipped" + ("" if split == "all" else f"_{split}")] = sum(
            p.swap is None for p in asked if split == "all" or p.record.split == split)
    return m


def run_clapnq_llm(folder: Path, config: Config, *, embedder: Any = None, limit: int | None = None,
                   dump: Dump | None = None) -> SuiteResult:
    """Replay right, added, other and swapped answers of the answerable records through the real openai client."""
    name = "clapnq_llm"
    loaded = _load(folder, name)
    if isinstance(loaded, SuiteResult):
        return loaded
    t0 = time.perf_counter()
    answerable, unanswerable = loaded
    result = SuiteResult(name)
    asked = replays(answerable)[:limit] if limit is not None else replays(answerable)
    server = ReplayServer({p.record.question: p.answers for p in asked})
    for p in asked:  # the generator is asked the question as the pipeline cleaned it (no zero-width spaces)
        server.add(clean_input(p.record.question), **p.answers)
    cfg = config.changed(generator__kind="openai", openai=replace(config.openai, base_url=server.base_url))
    result.notes.append(
        "generator=openai against bench/grounding/replay_server.py; verify settings as configured (every replayed sentence "
        f"carries a [Cn], resolved per request); {len(asked)} answerable records asked per pass, in file order; "
        f"other = record (i + {SHIFT}) % n; {sum(p.swap is None for p in asked)} records with no possible swap skipped")
    with server, temp_app(cfg, embedder=embedder, prefix=name) as app:
        doc_ids = _kb(app, answerable + unanswerable, result)
        for mode in MODES:
            server.set_mode(mode)
            items = [p for p in asked if mode in p.answers]
            result.passes.append(run_pass(app, name, mode, "reply" if mode == "right" else "refuse", items,
                                          _llm_row(app, server, name, mode, doc_ids), dump))
        result.notes.append(f"replay server: {server.requests} LLM requests, {server.misses} unknown questions")
    result.metrics = _llm_metrics(result.passes, asked)
    reaches = ("reaches_user", lambda r: bool(r.extra.get("reaches_user")))
    result.tables = table(result.passes, {"added": reaches, "swapped": reaches,
                                          "other": ("blocked", lambda r: not delivered(r.decision))})
    result.seconds = time.perf_counter() - t0
    return result


def _ext_row(app: App, name: str, tag: str, expected: str,
             doc_ids: dict[tuple[str, int], str]) -> Callable[[int, ds.ClapRecord], Row]:
    def row(i: int, r: ds.ClapRecord) -> Row:
        d = ask(app, name, tag, r.index, r.question)
        doc = doc_ids[(r.kind, r.index)]
        from_gold = delivered(d) and any(s.doc_id == doc for s in d.sources)
        return Row(name, tag, r.index, r.question, expected, d, gold_doc=doc, gold_rank=rank_of(app, r.question, doc),
                   split=r.split, extra={"delivered": delivered(d), "held": held(d), "from_gold": from_gold})

    return row


def run_clapnq_extractive(folder: Path, config: Config, *, embedder: Any = None, limit: int | None = None,
                          dump: Dump | None = None) -> SuiteResult:
    """The extractive generator on the answerable (answer) and unanswerable (refuse) questions."""
    name = "clapnq_extractive"
    loaded = _load(folder, name)
    if isinstance(loaded, SuiteResult):
        return loaded
    t0 = time.perf_counter()
    answerable, unanswerable = loaded
    result = SuiteResult(name)
    result.notes.append(f"generator=extractive; {limit or 'all'} questions of each file, in file order")
    with temp_app(config.changed(generator__kind="extractive"), embedder=embedder, prefix=name) as app:
        doc_ids = _kb(app, answerable + unanswerable, result)
        for tag, expected, records in (("answerable", "reply", answerable), ("unanswerable", "refuse", unanswerable)):
            items = records[:limit] if limit is not None else records
            result.passes.append(run_pass(app, name, tag, expected, items, _ext_row(app, name, tag, expected, doc_ids),
                                          dump))
    ans, un = result.passes
    result.metrics = {**by_split(ans, "answered", lambda r: delivered(r.decision)),
                      **by_split(ans, "answered_from_gold", lambda r: bool(r.extra["from_gold"])),
                      **by_split(un, "unanswerable_refused", lambda r: not delivered(r.decision)),
                      **pass_metrics(ans), **pass_metrics(un), **split_recall(ans)}
    result.tables = table(result.passes, {"answerable": ("answered_from_gold", lambda r: bool(r.extra["from_gold"])),
                                          "unanswerable": ("not delivered", lambda r: not delivered(r.decision))})
    result.seconds = time.perf_counter() - t0
    return result
