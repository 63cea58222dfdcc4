"""The conversations suite's trade-off on its dev part (issue 49): answering against refusing.

    python -m bench.grounding.conversations_tradeoff            # every point not measured yet
    python -m bench.grounding.conversations_tradeoff --fresh    # measure every point again

Each point is one setting changed from config.toml (`POINTS`), played through the real pipeline
exactly as the conversations suite plays it (bench/grounding/conversations.py: the same knowledge
bases, the same turns, the same scoring), on the DEV part only: MTRAG-UN's dev conversations, the dev
docs conversations, and the docs suite's dev first questions (docs_questions.yaml's first paraphrase
of each section and its even off-docs questions, each in a conversation of its own). The shipped
setting, and a setting proposed from the dev figures (`PROPOSED`), are also played on the test part,
which tunes nothing. The knowledge bases are ingested once and every point reads the same index, with
a fresh transcript store of its own.

Besides the figures, every answerable MTRAG-UN last turn that is not answered from a reference passage
is put in one class, by what the turn's record and its retrieval show (`miss_class`).

Each measured point is appended to bench/.work/conversations-tradeoff.jsonl as it finishes, with the
code it measured (the commit and uncommitted changes under core/, bot/, storage/, config.toml); a
rerun skips the points measured at the same code. The result:
bench/results/grounding-conversations-tradeoff.{json,md}, its headline figures appended to
bench/results/history.csv.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import shutil
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from bench import RESULTS, ROOT
from bench.grounding import conversations as conv
from bench.grounding.docs_suite import DOCS, from_section, questions
from bench.grounding.harness import Dump, RecordingIndex, Row, SuiteResult, ask, temp_app
from bench.grounding.report import provenance
from bench.grounding.resolution import condense
from bench.grounding.run import base_config
from bench.history import record
from bot.app import App
from bot.config import Config
from core.messages import Decision, ReadingMethod
from core.retrieve import resolve as resolve_mod
from core.turn import retrieving as pipeline_mod

NAME = "grounding-conversations-tradeoff"
PARTIAL = ROOT / "bench" / ".work" / "conversations-tradeoff.jsonl"
TOP = 5  # "retrieved": among the turn's first search's top-5 (its top_k)


@dataclass(frozen=True)
class Point:
    key: str  # a short name, also the prefix of its history rows
    label: str  # the setting, as the table shows it
    overrides: dict[str, Any] = field(default_factory=dict)  # "section.field" of CoreSettings -> value
    resolver: str = "local"  # "local" (shipped), "glued" or "last_two" (`resolver`)
    parts: tuple[str, ...] = ("dev",)


SHIPPED = "shipped"
POINTS: tuple[Point, ...] = (
    Point(SHIPPED, "as shipped ([reader] min_answer_probability 0.4)", parts=("dev", "test")),
    Point("reader_0.2", "[reader] min_answer_probability = 0.2", {"reader.min_answer_probability": 0.2}),
    Point("reader_0.3", "[reader] min_answer_probability = 0.3", {"reader.min_answer_probability": 0.3}),
    Point("reader_0.5", "[reader] min_answer_probability = 0.5", {"reader.min_answer_probability": 0.5}),
    Point("reader_0.6", "[reader] min_answer_probability = 0.6", {"reader.min_answer_probability": 0.6}),
    Point("reader_0.7", "[reader] min_answer_probability = 0.7", {"reader.min_answer_probability": 0.7}),
    Point("reader_0.8", "[reader] min_answer_probability = 0.8", {"reader.min_answer_probability": 0.8}),
    Point("top1_0.25", "[reader] min_top1_similarity = 0.25", {"reader.min_top1_similarity": 0.25}),
    Point("ask_back_off", "[retrieval] ask_back = false", {"retrieval.ask_back": False}),
    Point("resolver_off", "resolver off: the earlier questions glued before a follow-up (the condensing shipped "
          "before it) are searched, every stage reads the question as asked", resolver="glued"),
    Point("last_two", "every question after an earlier one read as the previous question and it, glued, by every "
          "stage (what the peer's best query reads)", resolver="last_two"),
)
PROPOSED: str | None = None  # a point the dev figures clearly favour: also played on the test part

# (figure, the table's column): the suite's own figure names (per part), and the first questions
COLUMNS = (
    ("mtrag_answerable_from_reference", "MTRAG-UN answerable + partial answered from a reference passage"),
    ("mtrag_unanswerable_refused", "unanswerable refused"),
    ("mtrag_underspecified_refused", "underspecified asked back or refused"),
    ("docs_follow_ups_from_section", "docs follow-ups from the section meant"),
    ("first_questions_right", "first questions answered right"),
)
MISS_CLASSES = (  # in the order a miss is put in the first that fits (`miss_class`)
    ("asked_back", "asked back (AMBIGUOUS_QUESTION)"),
    ("query", "no reference in the top-5 searched, though a plain MiniLM has one in its top-5 with the last question "
              "alone or the last two glued: the query searched lost it"),
    ("retrieval", "no reference in the top-5, nor in a plain MiniLM's top-5 with either query"),
    ("similarity_gate", "a reference retrieved; refused by a similarity gate (top-1 below [reader] min_top1_similarity)"),
    ("reader_floor", "a reference retrieved; no chunk read reached [reader] min_answer_probability"),
    ("unknown_word", "a reference retrieved; refused for a word no document holds (core/gate/mentions.py)"),
    ("no_sentence", "a reference retrieved; the extractive generator found no sentence to quote (INSUFFICIENT_CONTEXT)"),
    ("other_refusal", "a reference retrieved; refused by another check"),
    ("wrong_passage", "a reference retrieved; answered from another passage"),
)


# -- settings ---------------------------------------------------------------------------------

def point_config(config: Config, point: Point) -> Config:
    """config.toml with the point's settings changed, the extractive generator as the suite uses."""
    core = config.core
    for dotted, value in point.overrides.items():
        section, name = dotted.split(".")
        part = getattr(core, section)
        if not hasattr(part, name):
            raise ValueError(f"{dotted}: no such setting")
        core = replace(core, **{section: replace(part, **{name: value})})
    return config.with_core(core).changed(generator__kind="extractive")


@dataclass(frozen=True)
class GluedResolution(resolve_mod.Resolution):
    query: str = ""  # what is searched: the earlier questions glued before a follow-up


def glued_resolve_turn(question: str, prior: Sequence[Any], *_: Any) -> resolve_mod.Resolution:
    """The resolver off: the question is read as asked by every stage, and searched glued after the
    earlier questions when the condensing shipped before the resolver took it for a follow-up
    (bench/grounding/resolution.py: `condense`). A question pointing at something never named is
    still asked back (that is [retrieval] ask_back's, measured on its own row). `prior` holds the
    turns the pipeline reads already (at most `[retrieval] history_turns`)."""
    query = condense(question, [(t.question, t.answer) for t in prior], len(prior))
    return GluedResolution(question, question, method=ReadingMethod.GLUED, why="the earlier questions glued before it",
                           unnamed=resolve_mod.unnamed_referent(question, prior), query=query)


def last_two_resolve_turn(question: str, prior: Sequence[Any], *_: Any) -> resolve_mod.Resolution:
    """The question after an earlier one, read by every stage as the previous question and it glued
    (the plain MiniLM peer's last-two query), whatever its words; a first question as asked."""
    if not prior:
        return resolve_mod.resolve(question, prior)
    return resolve_mod.Resolution(question, f"{prior[-1].question.strip()} {question.strip()}", method=ReadingMethod.GLUED,
                                  why="the previous question glued before it",
                                  unnamed=resolve_mod.unnamed_referent(question, prior))


def glued_search(resolution: resolve_mod.Resolution, *args: Any, **kwargs: Any) -> Any:
    query = getattr(resolution, "query", "") or resolution.resolved
    return _SEARCH(replace(resolution, resolved=query), *args, **kwargs)


_SEARCH = pipeline_mod.search


@contextlib.contextmanager
def resolver(kind: str) -> Iterator[None]:
    """The pipeline's resolution for one point ("local": as shipped)."""
    if kind == "local":
        yield
        return
    saved = pipeline_mod.resolve_turn, pipeline_mod.search
    if kind == "glued":
        pipeline_mod.resolve_turn, pipeline_mod.search = glued_resolve_turn, glued_search  # type: ignore[assignment]
    elif kind == "last_two":
        pipeline_mod.resolve_turn = last_two_resolve_turn  # type: ignore[assignment]
    else:
        raise ValueError(f"unknown resolver {kind!r}")
    try:
        yield
    finally:
        pipeline_mod.resolve_turn, pipeline_mod.search = saved


# -- what each turn saw -----------------------------------------------------------------------

class Watch:
    """Per turn (by turn_uid): the doc ids of its first search's top-5 and the chunks the reader
    read with their probabilities (the turn's own reading, not a refusal's check of suggestions)."""

    def __init__(self, app: App) -> None:
        self.app = app
        self.turns: dict[str, dict[str, Any]] = {}
        self._reading: Any = None
        pipe = app.pipeline
        handle, read = pipe.handle, pipe._read

        def watched_read(question: str, resolution: Any, hits: list[Any], reader: Any) -> Any:
            got = read(question, resolution, hits, reader)
            if self._reading is None:
                verdict = got[0]  # (the reader's verdict, the reading that stands)
                self._reading = verdict if verdict is not None else False
            return got

        def watched_handle(msg: Any) -> Decision:
            self._reading = None
            d = handle(msg)
            idx = pipe.index
            top = [h.source for h in idx.last[:TOP]] if isinstance(idx, RecordingIndex) else []
            reading = self._reading or None
            self.turns[d.turn_uid] = {
                "top": top,
                "read": [(h.source, h.answer_probability) for h in reading.hits if h.answer_probability is not None]
                if reading else [],
            }
            return d

        pipe._read = watched_read  # type: ignore[method-assign]
        pipe.handle = watched_handle  # type: ignore[method-assign]


SIMILARITY_GATES = frozenset(["has_matches", "offtopic_floor", "top1_similarity", "mean_confidence",
                              "context_sufficiency"])  # core/gate/similarity_gates.py


def turn_facts(row: Row, seen: dict[str, Any], kbs: Kbs) -> dict[str, Any]:
    """One MTRAG-UN last turn as the result keeps it: ids, outcome and scores, none of the dataset's text."""
    refs = set(row.gold_doc.split(",")) if row.gold_doc else set()

    def is_ref(source: str) -> bool:
        return kbs.names.get(Path(source).stem, "") in refs

    d, read = row.decision, seen["read"]
    ref_probs = [float(p) for s, p in read if is_ref(s)]
    return {"task_id": row.extra["task_id"], "split": row.split, "group": row.pass_name.removeprefix("mtrag_"),
            "multi_turn": row.extra["multi_turn"], "earlier_turns": row.extra["earlier_turns"],
            "right": bool(row.extra["right"]), "refused": d.refused, "reason": d.refusal_reason if d.refused else "",
            "checks": [c for c in d.checks_failed if not c.endswith("(warn)")],
            "in_top5": any(is_ref(s) for s in seen["top"]), "read_reference": bool(ref_probs),
            "peer_top5": kbs.peer_top5.get(row.extra["task_id"], False), "resolved": bool(d.resolution is not None and d.resolution.follow_up),
            "best_probability": round(max(float(p) for _, p in read), 4) if read else None,
            "reference_probability": round(max(ref_probs), 4) if ref_probs else None,
            "top1_similarity": d.scores.get("top1_similarity")}


def miss_class(f: dict[str, Any]) -> str:
    """Why an answerable last turn was not answered from a reference passage: the first of
    MISS_CLASSES that fits its facts (`turn_facts`)."""
    if f["reason"] == conv.ASK_BACK:
        return "asked_back"
    if not f["in_top5"]:
        return "query" if f["peer_top5"] else "retrieval"
    if not f["refused"]:
        return "wrong_passage"
    if "answered_by_sources" in f["checks"]:
        return "reader_floor"
    if SIMILARITY_GATES & set(f["checks"]):
        return "similarity_gate"
    if not f["checks"] and f["reason"] == "NOT_ANSWERED_BY_SOURCES":
        return "unknown_word"
    if not f["checks"] and f["reason"] == "INSUFFICIENT_CONTEXT":
        return "no_sentence"
    return "other_refusal"


# -- one point --------------------------------------------------------------------------------

@dataclass
class Kbs:
    docs_index: str
    mtrag_index: str
    names: dict[str, str]
    tasks: list[conv.MtragTask]
    peer_top5: dict[str, bool]  # task_id -> a plain MiniLM has a reference in its top-5 (last, or last two glued)
    workdir: Path


def measure(point: Point, config: Config, kbs: Kbs, embedder: Any, dump: Dump | None = None) -> dict[str, Any]:
    """Play the point's parts: its figures per part, and the facts of every MTRAG-UN last turn."""
    t0 = time.perf_counter()
    cfg = point_config(config, point)
    result = SuiteResult(conv.NAME)
    parts = set(point.parts)
    first: list[tuple[str, bool]] = []
    with resolver(point.resolver):
        with temp_app(cfg.changed(storage__index_uri=kbs.docs_index), embedder=embedder, prefix=f"{point.key}-docs") as app:
            conv.run_docs_conversations(app, [c for c in conv.load_docs_conversations() if c.split in parts], result,
                                        dump)
            para, off = questions()
            for i, a in enumerate([a for a in para + off if a.split in parts]):
                d = ask(app, "tradeoff", "first", i, a.question)
                first.append((a.split, from_section(d, a.file, a.heading) if a.file else d.refused))
        with temp_app(cfg.changed(storage__index_uri=kbs.mtrag_index), embedder=embedder, prefix=f"{point.key}-mtrag") as app:
            watch = Watch(app)
            conv.run_mtrag(app, [t for t in kbs.tasks if t.split in parts], kbs.names, result, dump, conv.Clock())
    m = result.metrics
    figures: dict[str, dict[str, list[int]]] = {}
    for part in point.parts:
        def pair(key: str, part: str = part) -> list[int]:
            return [int(m[f"{key}_{part}_right"]), int(m[f"{key}_{part}_n"])]

        f = {k: pair(k) for k in ("mtrag_answerable_from_reference", "mtrag_unanswerable_refused",
                                  "mtrag_underspecified_refused", "mtrag_underspecified_asked_back",
                                  "mtrag_answerable_follow_ups_from_reference", "docs_follow_ups_from_section",
                                  "docs_first_from_section")}
        f["docs_first_questions"] = [sum(ok for s, ok in first if s == part), sum(s == part for s, _ in first)]
        f["first_questions_right"] = [f["docs_first_questions"][0] + f["docs_first_from_section"][0],
                                      f["docs_first_questions"][1] + f["docs_first_from_section"][1]]
        figures[part] = f
    turns = [turn_facts(r, watch.turns[r.decision.turn_uid], kbs) for p in result.passes if p.name.startswith("mtrag_")
             for r in p.rows]
    return {"key": point.key, "label": point.label, "overrides": point.overrides, "resolver": point.resolver,
            "parts": list(point.parts), "figures": figures, "turns": turns, "seconds": round(time.perf_counter() - t0, 1)}


# -- the knowledge bases, once ----------------------------------------------------------------

@contextlib.contextmanager
def knowledge_bases(config: Config, embedder: Any) -> Iterator[Kbs]:
    """docs/ and MTRAG-UN's passages ingested as the conversations suite ingests them, each index
    copied to a folder every point's App reads."""
    cfg = config.changed(generator__kind="extractive")
    every = conv.load_mtrag_un(conv.MTRAG_UN_FILE)
    passages = conv.kb_passages(every)
    with tempfile.TemporaryDirectory(prefix="groundbot-tradeoff-") as tmp:
        work = Path(tmp)
        with temp_app(cfg, embedder=embedder, prefix="tradeoff-docs") as app:
            app.ingest([DOCS])
            shutil.copytree(app.config.index_location, work / "docs-index")
        with temp_app(cfg, embedder=embedder, prefix="tradeoff-mtrag") as app:
            kb = app.config.paths.data_dir.parent / "mtrag"
            names = conv.write_mtrag_kb(passages, kb)
            t0 = time.perf_counter()
            app.ingest([kb])
            print(f"  MTRAG-UN KB: {len(passages)} passages ingested in {time.perf_counter() - t0:.0f}s", file=sys.stderr)
            peer = peer_top5(app, every, names, passages)
            shutil.copytree(app.config.index_location, work / "mtrag-index")
        yield Kbs(str(work / "docs-index"), str(work / "mtrag-index"), names, every, peer, work)


def peer_top5(app: App, tasks: Sequence[conv.MtragTask], names: dict[str, str],
              passages: Sequence[conv.Passage]) -> dict[str, bool]:
    """task_id -> the suite's peer (a plain MiniLM, a passage scored by its best chunk) has a
    reference passage in its top-5 with the last question alone or with the last two glued."""
    asked = [t for t in tasks if t.kind in conv.ANSWERABLE and t.references]
    chunk_ids, vecs, _ = conv.passage_matrix(app, names, passages)
    ids = sorted(set(chunk_ids))
    at = {x: i for i, x in enumerate(ids)}
    owner = np.asarray([at[x] for x in chunk_ids])
    found = dict.fromkeys((t.task_id for t in asked), False)
    for query in ("last", "last_two"):
        qs = app.embedder.embed_queries([conv.normalize_text(conv.peer_queries(t)[query]) for t in asked])
        ranks = conv.peer_ranks(conv.passage_scores(qs @ vecs.T, owner, len(ids)), ids, [t.references for t in asked])
        for t, r in zip(asked, ranks, strict=True):
            found[t.task_id] |= r is not None and r < TOP
    return found


# -- the result -------------------------------------------------------------------------------

def share(pair: Sequence[int]) -> str:
    k, n = pair
    return f"{k / n:.3f} ({k}/{n})" if n else "–"


def rate(pair: Sequence[int]) -> float:
    return pair[0] / pair[1] if pair[1] else 0.0


def dev_turns(point: dict[str, Any], group: str, part: str = "dev") -> list[dict[str, Any]]:
    return [t for t in point["turns"] if t["split"] == part and t["group"] == group]


def miss_counts(point: dict[str, Any], part: str = "dev") -> Counter[str]:
    return Counter(miss_class(t) for t in dev_turns(point, "answerable", part) if not t["right"])


def summary(points: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The figures the result's text states, computed from the points."""
    by = {p["key"]: p for p in points}
    mtrag = ("mtrag_answerable_from_reference", "mtrag_unanswerable_refused", "mtrag_underspecified_refused")
    out: dict[str, Any] = {"all_three_at_0.80": [p["key"] for p in points
                                                 if all(rate(p["figures"]["dev"][k]) >= 0.8 for k in mtrag)]}
    out["best_min"] = max((min(rate(p["figures"]["dev"][k]) for k in mtrag), p["key"]) for p in points)
    ship = by.get(SHIPPED)
    if ship:
        base = ship["figures"]["dev"]
        out["not_worse_than_shipped"] = [
            p["key"] for p in points if p["key"] != SHIPPED
            and all(p["figures"]["dev"][k][0] >= base[k][0] for k in (*mtrag, "docs_follow_ups_from_section",
                                                                        "first_questions_right"))]
        later = [t for t in dev_turns(ship, "answerable") if t["earlier_turns"]]
        out["resolved_right"] = [sum(t["right"] for t in later if t["resolved"]), sum(t["resolved"] for t in later)]
        out["as_asked_right"] = [sum(t["right"] for t in later if not t["resolved"]),
                                 sum(not t["resolved"] for t in later)]
        shipped_right = {t["task_id"]: t["right"] for t in ship["turns"] if t["split"] == "dev"}
        out["changed_vs_shipped"] = {p["key"]: [sum(t["right"] and not shipped_right[t["task_id"]] for t in p["turns"]
                                                    if t["split"] == "dev"),
                                                sum(shipped_right[t["task_id"]] and not t["right"] for t in p["turns"]
                                                    if t["split"] == "dev")]
                                     for p in points if p["key"] != SHIPPED}
        if "resolver_off" in by:
            off = {t["task_id"]: t["right"] for t in by["resolver_off"]["turns"] if t["split"] == "dev"}
            rewritten = [t for t in later if t["resolved"]]
            out["rewritten_missed_right_unresolved"] = sum(not t["right"] and off[t["task_id"]] for t in rewritten)
            out["rewritten_right_missed_unresolved"] = sum(t["right"] and not off[t["task_id"]] for t in rewritten)
        wrong_under = [t for t in dev_turns(ship, "underspecified") if not t["right"]]
        out["underspecified_answered"] = len(wrong_under)
        out["underspecified_answered_first"] = sum(not t["earlier_turns"] for t in wrong_under)
    return out


def quartiles(values: Sequence[float]) -> str:
    v = np.asarray(values)
    return " | ".join(f"{np.quantile(v, q):.2f}" for q in (0.25, 0.5, 0.75)) if len(v) else "– | – | –"


def markdown(points: Sequence[dict[str, Any]], code: str, command: str) -> str:
    by = {p["key"]: p for p in points}
    s = summary(points)
    dev0 = points[0]["figures"]["dev"]
    lines = [
        "# Conversations: answering against refusing, on the dev part (issue 49)", "",
        f"`{command}` — {dt.date.today().isoformat()}; {code}. Each row changes one setting of config.toml and "
        "plays the conversations suite's dev part through the real pipeline (bench/grounding/conversations_tradeoff.py): "
        f"MTRAG-UN's dev conversations ({dev0['mtrag_answerable_from_reference'][1]} answerable + partial, "
        f"{dev0['mtrag_unanswerable_refused'][1]} unanswerable, {dev0['mtrag_underspecified_refused'][1]} underspecified "
        f"last turns), the {dev0['docs_first_from_section'][1]} dev docs conversations, and the docs suite's dev first questions (first paraphrase of each section, even "
        "off-docs questions) with the docs conversations' openers. The test part is played only at the shipped setting"
        + (f" and at the one proposed ({by[PROPOSED]['label']})" if PROPOSED and PROPOSED in by else "") + ".", "",
        "| setting | " + " | ".join(label for _, label in COLUMNS) + " |", "|---|" + "---:|" * len(COLUMNS),
    ]
    cols = [k for k, _ in COLUMNS]
    for p in points:
        lines.append(f"| {p['label']} | " + " | ".join(share(p["figures"]["dev"][k]) for k in cols) + " |")
    for p in points:
        if "test" in p["figures"]:
            lines.append(f"| **test part**: {p['label']} | " + " | ".join(share(p["figures"]["test"][k]) for k in cols)
                         + " |")
    best, best_key = s["best_min"]
    n_under = points[0]["figures"]["dev"]["mtrag_underspecified_refused"][1]
    lines += ["", "Underspecified asked back (AMBIGUOUS_QUESTION), dev: "
              + ", ".join(f"{p['key']} {p['figures']['dev']['mtrag_underspecified_asked_back'][0]}" for p in points)
              + f" of {n_under}. "
              + (f"Reaching 0.80 on all three MTRAG-UN figures: {', '.join(s['all_three_at_0.80'])}"
                 if s["all_three_at_0.80"] else "No setting reaches 0.80 on all three MTRAG-UN figures")
              + f"; the best of the lowest of the three is {best:.3f} ({best_key}). Settings no worse than shipped on "
              "any figure of the table: " + (", ".join(s.get("not_worse_than_shipped", [])) or "none") + ". MTRAG-UN "
              "dev last turns right where shipped is wrong / wrong where shipped is right: "
              + ", ".join(f"{k} +{a}/-{b}" for k, (a, b) in s.get("changed_vs_shipped", {}).items()) + ".", ""]
    lines += misses_section(points, s) + move_section(by, s)
    return "\n".join(lines) + "\n"


def misses_section(points: Sequence[dict[str, Any]], s: dict[str, Any]) -> list[str]:
    ship = next(p for p in points if p["key"] == SHIPPED)
    counts = {p["key"]: miss_counts(p) for p in points}
    lines = ["## Why answerable dev last turns miss", "",
             "Each answerable or partly answerable dev last turn not answered from a reference passage, in the first "
             "class that fits, read off its record, its first search's top-5 and the chunks the reader read:", "",
             "| class | " + " | ".join(p["key"] for p in points) + " |", "|---|" + "---:|" * len(points)]
    for key, label in MISS_CLASSES:
        lines.append(f"| {label} | " + " | ".join(str(counts[p['key']].get(key, 0)) for p in points) + " |")
    lines.append("| **misses** | " + " | ".join(f"**{sum(counts[p['key']].values())}**" for p in points) + " |")
    unread = sum(1 for t in dev_turns(ship, "answerable") if not t["right"] and miss_class(t) == "reader_floor"
                 and not t["read_reference"])
    test = miss_counts(ship, "test") if "test" in ship["parts"] else Counter()
    lines += ["", f"At the shipped setting {unread} of the reader-floor misses never read the reference (retrieved "
              f"past the chunks read). Later turns (an earlier question asked) read with earlier words (the term "
              f"selector's pick): {share(s['resolved_right'])} answered right; read as asked: "
              f"{share(s['as_asked_right'])}."
              + (" Test part, shipped: " + ", ".join(f"{k} {v}" for k, v in sorted(test.items()))
                 + f" ({sum(test.values())} misses)." if test else ""), "",
              "The reader's best probability on the dev last turns it read, shipped setting (p25 | p50 | p75):", "",
              "| last turns | n | p25 | p50 | p75 |", "|---|---:|---:|---:|---:|"]
    for group in ("answerable", "unanswerable", "underspecified"):
        for right in (True, False):
            probs = [t["best_probability"] for t in dev_turns(ship, group) if t["right"] == right
                     and t["best_probability"] is not None]
            lines.append(f"| {group}, {'right' if right else 'wrong'} | {len(probs)} | {quartiles(probs)} |")
    return lines + [""]


def move_section(by: dict[str, dict[str, Any]], s: dict[str, Any]) -> list[str]:
    """What would move the figures, stated from the counts (the keys it reads must have been measured)."""
    need = (SHIPPED, "reader_0.2", "reader_0.6", "ask_back_off", "resolver_off", "last_two", "top1_0.25")
    if any(k not in by for k in need):
        return []
    f = {k: by[k]["figures"]["dev"] for k in need}
    c = {k: miss_counts(by[k]) for k in need}
    low = c["reader_0.2"]
    downstream = low["similarity_gate"] + low["unknown_word"] + low["no_sentence"] + low["other_refusal"]
    return [
        "## What would move it", "",
        f"- **The reader's floor is a trade, not a fix.** Lowered to 0.2 it answers "
        f"{share(f['reader_0.2']['mtrag_answerable_from_reference'])} of the answerable turns and refuses "
        f"{share(f['reader_0.2']['mtrag_unanswerable_refused'])} of the unanswerable; raised to 0.6 it refuses "
        f"{share(f['reader_0.6']['mtrag_unanswerable_refused'])} and {share(f['reader_0.6']['mtrag_underspecified_refused'])} "
        f"of the underspecified, and answers {share(f['reader_0.6']['mtrag_answerable_from_reference'])}. The reader's "
        "probabilities overlap (table above): the wrongly answered unanswerable and underspecified turns are read as "
        "surely as the rightly answered answerable ones. A reader that tells them apart on conversational questions "
        "(trained on follow-ups, reading the question as meant) is what moves all three at once.",
        f"- **Answerable >= 0.80 is out of reach of any floor**: with the floor at 0.2, {sum(low.values())} answerable "
        f"turns still miss: {low['asked_back']} asked back, {low['query'] + low['retrieval']} without a reference in "
        f"the top-5, and {downstream} refused after the reader by the checks downstream of it (similarity gate "
        f"{low['similarity_gate']}, a word no document holds {low['unknown_word']}, no sentence to quote "
        f"{low['no_sentence']}, other {low['other_refusal']}). Lowering [reader] min_top1_similarity to 0.25 answers "
        f"{share(f['top1_0.25']['mtrag_answerable_from_reference'])} but refuses only "
        f"{share(f['top1_0.25']['mtrag_unanswerable_refused'])} of the unanswerable.",
        f"- **Retrieval is not the gap**: {c[SHIPPED]['query'] + c[SHIPPED]['retrieval']} of "
        f"{sum(c[SHIPPED].values())} misses at the shipped setting lack a reference in the top-5.",
        f"- **Resolution**: with the resolver off (the earlier questions glued into the search, the question read as "
        f"asked) MTRAG-UN answers {share(f['resolver_off']['mtrag_answerable_from_reference'])} but the docs "
        f"follow-ups fall to {share(f['resolver_off']['docs_follow_ups_from_section'])}. Of the answerable later turns "
        f"read with earlier words, {s['rewritten_missed_right_unresolved']} miss that the resolver-off reading answers "
        f"from a reference (the words picked were wrong) and {s['rewritten_right_missed_unresolved']} are answered that it "
        f"misses; {s['as_asked_right'][1] - s['as_asked_right'][0]} of the "
        f"{s['as_asked_right'][1] - s['as_asked_right'][0] + s['resolved_right'][1] - s['resolved_right'][0]} "
        "later-turn misses were read as asked (the selector picked no earlier word, or the reader found the "
        "question better answered as typed). Reading "
        f"the last two questions glued in every stage answers only "
        f"{share(f['last_two']['mtrag_answerable_from_reference'])}: the reader needs one standalone question, not "
        "glued context. A resolver that writes one (a language model's rewrite, or a local one trained to add the "
        "words a person adds: its CANARD figures are in grounding-conversations.md) is the lever for follow-ups.",
        f"- **Asking back**: off, it answers {share(f['ask_back_off']['mtrag_answerable_from_reference'])} "
        f"({c[SHIPPED]['asked_back']} answerable turns were asked back) and refuses "
        f"{share(f['ask_back_off']['mtrag_underspecified_refused'])} of the underspecified. Of the "
        f"{s['underspecified_answered']} underspecified turns answered at the shipped setting, "
        f"{s['underspecified_answered_first']} are first questions, which the unnamed-thing check never reads "
        "(\"this burger\" is asked back only after an earlier turn).",
        "",
    ]


def headline(points: Sequence[dict[str, Any]]) -> dict[str, float]:
    return {f"{p['key']}.{k}_{part}": round(rate(f[k]), 4) for p in points for part, f in p["figures"].items()
            for k, _ in COLUMNS if f[k][1]}


def result_json(points: Sequence[dict[str, Any]], code: str, command: str) -> dict[str, Any]:
    """The result file: every point's figures and miss classes; the facts of each miss at the shipped setting."""
    out = []
    for p in points:
        row = {k: p[k] for k in ("key", "label", "overrides", "resolver", "parts", "figures", "seconds")}
        row["answerable_misses"] = {part: dict(miss_counts(p, part)) for part in p["parts"]}
        if p["key"] == SHIPPED:
            row["misses"] = [{**t, "class": miss_class(t)} for t in p["turns"]
                             if t["group"] == "answerable" and not t["right"] and t["split"] == "dev"]
        out.append(row)
    return {"code": code, "command": command, "proposed": PROPOSED, "summary": summary(points), "points": out}


# -- command line -----------------------------------------------------------------------------

def load_partial(path: Path, code: str) -> dict[str, dict[str, Any]]:
    """The points measured at this code (a later row of a point wins)."""
    if not path.is_file():
        return {}
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return {r["key"]: r for r in rows if r.get("code") == code}


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.grounding.conversations_tradeoff",
                                description=__doc__.split("\n")[0])
    p.add_argument("--config", type=Path, default=ROOT / "config.toml", help="config.toml the points change")
    p.add_argument("--points", default="", help="comma-separated point keys (default: all of POINTS)")
    p.add_argument("--partial", type=Path, default=PARTIAL, help="where each measured point is kept as it finishes")
    p.add_argument("--fresh", action="store_true", help="measure every point again")
    p.add_argument("--out", type=Path, default=RESULTS / f"{NAME}.json", help="JSON result (the .md goes next to it)")
    p.add_argument("--no-history", action="store_true", help="do not append to bench/results/history.csv")
    p.add_argument("--dump", type=Path, default=None,
                   help="write one JSONL row per scored turn of the points measured now here (with the point's key)")
    args = p.parse_args(argv)
    chosen = [x.strip() for x in args.points.split(",") if x.strip()]
    unknown = [k for k in chosen if k not in {pt.key for pt in POINTS}]
    if unknown:
        p.error(f"unknown point(s): {', '.join(unknown)}")
    points = [replace(pt, parts=("dev", "test")) if pt.key == PROPOSED else pt
              for pt in POINTS if not chosen or pt.key in chosen]
    code = provenance(ROOT)
    print(code, flush=True)
    done = {} if args.fresh else load_partial(args.partial, code)
    todo = [pt for pt in points if pt.key not in done or done[pt.key].get("parts") != list(pt.parts)]
    t0 = time.perf_counter()
    if todo:
        config = base_config(args.config)
        from models.embedders import make_embedder

        embedder = make_embedder(config.embedder.name, config.embedder.batch_size)
        args.partial.parent.mkdir(parents=True, exist_ok=True)
        with knowledge_bases(config, embedder) as kbs:
            for pt in todo:
                print(f"== {pt.key}: {pt.label}", flush=True)
                with contextlib.ExitStack() as stack:
                    dump = None
                    if args.dump:
                        fh = stack.enter_context(args.dump.open("a", encoding="utf-8"))

                        def dump(row: dict[str, Any], fh: Any = fh, key: str = pt.key) -> None:
                            fh.write(json.dumps({"point": key, **row}, ensure_ascii=False, default=str) + "\n")
                    row = {**measure(pt, config, kbs, embedder, dump), "code": code}
                with args.partial.open("a", encoding="utf-8") as out:
                    out.write(json.dumps(row, ensure_ascii=False) + "\n")
                done[pt.key] = row
                f = row["figures"]["dev"]
                print("   " + ", ".join(f"{k} {share(v)}" for k, v in f.items()) + f"; {row['seconds']}s", flush=True)
    measured = [done[pt.key] for pt in points]
    command = "python -m bench.grounding.conversations_tradeoff" + (f" --points {args.points}" if chosen else "")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result_json(measured, code, command), indent=1, ensure_ascii=False) + "\n",
                        encoding="utf-8")
    md = args.out.with_suffix(".md")
    md.write_text(markdown(measured, code, command), encoding="utf-8")
    rows = 0 if args.no_history else record(args.out.stem, headline(measured), command)
    print(f"wrote {args.out} and {md}; {rows} figures added to the history; {time.perf_counter() - t0:.0f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
