"""The conversations suite of the grounding benchmark (issue 49): follow-up questions, asked turn by
turn through the real pipeline (`App.ask`, one ConversationKey per conversation, so the earlier
turns are the history groundbot reads).

- `docs conversations`: groundbot's docs (docs/, ingested as the docs suite ingests them) and the
  short conversations of bench/grounding/docs_conversations.yaml. Each turn names the section meant;
  scored: first questions and follow-ups answered from their section, follow-ups that mean another
  section answered with the previous turn's section instead, and, where the decision record has
  one, the `resolved_question` (how many follow-ups were resolved to other words, how many
  self-contained questions were left alone). Split: as marked in the file.
- `MTRAG-UN`: the knowledge base is every reference passage of every task (one Markdown file per
  passage named for its document_id); each task's earlier user questions are asked in order in one
  conversation (the agent turns' text is not used: groundbot makes its own replies), then its last
  question, scored by its kind: answerable and partly answerable -> replied citing one of the
  task's reference passages; unanswerable and underspecified -> refused (asked back: refused with
  AMBIGUOUS_QUESTION, counted apart, with the refusals that offered suggestions); also by
  `Multi-Turn` (Follow-up / Clarification / N/A). Split by a hash of conversation_id (a third test).
- peer rows: a plain MiniLM that never refuses (the embedder groundbot uses, cosine against each
  ingested passage's chunk vectors, the best chunk standing for its passage): is a reference passage
  its top-1 / within its top-5 with the last question alone, all user questions glued, or the last two.
- resolution figures (bench/grounding/resolution.py): CANARD and MTRAG's human rewrites against a
  follow-up resolver (`core.retrieve.resolve`) and today's condensing, when that module exists.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from bench import ROOT, rewrites
from bench import datasets as ds
from bench.grounding.docs_suite import DOCS, _cites, _leaf, from_section, led_by_section
from bench.grounding.harness import (
    Dump,
    PassResult,
    RecordingIndex,
    Row,
    SuiteResult,
    ingest_kb,
    temp_app,
)
from bench.grounding.resolution import run_resolution
from bot.app import App
from bot.config import Config
from core.messages import ConversationKey, Decision, Incoming
from core.text.normalize import normalize_text

NAME = "conversations"
CONVERSATIONS = Path(__file__).with_name("docs_conversations.yaml")
MTRAG_UN_FILE = ds.DATASETS / "mtrag-un-dev" / "mtrag_un_dev.jsonl"
SPLITS = ("dev", "test")
TEST_EVERY = 3  # MTRAG-UN: a conversation whose id hashes to 0 mod 3 is test, the rest dev
ANSWERABLE = ("ANSWERABLE", "PARTIAL")
KINDS = ("ANSWERABLE", "PARTIAL", "UNANSWERABLE", "UNDERSPECIFIED")
MULTI_TURN = ("Follow-up", "Clarification", "N/A")
ASK_BACK = "AMBIGUOUS_QUESTION"  # the reason code of a refusal that asks which reading is meant
PEER_QUERIES = ("last", "glued", "last_two")
_SAFE = re.compile(r"[^A-Za-z0-9._-]+")
_TITLE_WORDS = 12


# -- docs conversations (pure) ----------------------------------------------------------------

@dataclass(frozen=True)
class DocsTurn:
    ask: str
    file: str  # the docs file whose section answers it ("a.md|faq.yaml" where both hold the heading)
    heading: str
    follow_up: bool | None = None  # None for a conversation's first turn

    def same_section(self, other: DocsTurn) -> bool:
        return bool(set(self.file.split("|")) & set(other.file.split("|"))) and _leaf(self.heading) == _leaf(other.heading)


@dataclass(frozen=True)
class DocsConversation:
    id: str
    split: str
    turns: tuple[DocsTurn, ...]


def load_docs_conversations(path: Path = CONVERSATIONS) -> list[DocsConversation]:
    """The conversations of docs_conversations.yaml; a malformed entry raises ValueError."""
    data = yaml.safe_load(path.read_text("utf-8"))
    out: list[DocsConversation] = []
    for c in data["conversations"]:
        cid = str(c["id"])
        if c.get("split") not in SPLITS:
            raise ValueError(f"{cid}: split must be dev or test, not {c.get('split')!r}")
        turns: list[DocsTurn] = []
        for i, t in enumerate(c["turns"]):
            follow = t.get("follow_up")
            if i == 0 and follow is not None:
                raise ValueError(f"{cid}: a first turn is neither a follow-up nor new")
            if i > 0 and not isinstance(follow, bool):
                raise ValueError(f"{cid}: turn {i + 1} must say follow_up: true or false")
            turns.append(DocsTurn(str(t["ask"]), str(t["file"]), str(t["heading"]), follow))
        if not 2 <= len(turns) <= 3:
            raise ValueError(f"{cid}: a conversation has 2 or 3 turns, not {len(turns)}")
        out.append(DocsConversation(cid, c["split"], tuple(turns)))
    ids = [c.id for c in out]
    if len(set(ids)) != len(ids):
        raise ValueError("conversation ids repeat")
    return out


def resolved_question(d: Decision) -> str | None:
    """The question the turn was resolved to, where the decision record has the field (being added)."""
    value = d.to_dict().get("resolved_question")
    return value if isinstance(value, str) and value.strip() else None


def resolution_differs(d: Decision, asked: str) -> bool:
    """The record holds a resolved question in other words than the question as asked."""
    r = resolved_question(d)
    return r is not None and normalize_text(r).strip(" ?!.") != normalize_text(asked).strip(" ?!.")


def score_docs_turn(d: Decision, turn: DocsTurn, previous: DocsTurn | None = None,
                    previous_answer: str = "") -> dict[str, Any]:
    """One turn's scores: answered from its section (`right`), opening with it (`led`), and, for a
    later turn meaning another section than the turn before, whether it was answered with the
    previous turn's answer instead (`repeated`: it cites the previous section and not its own, or
    repeats the previous reply word for word)."""
    right = from_section(d, turn.file, turn.heading)
    moves = previous is not None and not turn.same_section(previous)
    repeated = bool(moves and previous is not None and not d.refused and not right
                    and (_cites(d.sources, previous.file, previous.heading)
                         or (previous_answer and d.answer.strip() == previous_answer.strip())))
    return {"right": right, "led": led_by_section(d, turn.file, turn.heading), "moves_section": moves,
            "repeated": repeated, "resolved_question": resolved_question(d),
            "resolution_differs": resolution_differs(d, turn.ask), "offered": offers_section(d, turn.heading)}


def offers_section(d: Decision, heading: str) -> bool:
    """A refusal whose suggestions hold the heading meant: one pick from its answer."""
    meant = normalize_text(heading)
    return d.refused and any(normalize_text(s.text) == meant for s in d.suggestions)


# -- MTRAG-UN (pure) -------------------------------------------------------------------------

def conversation_split(conversation_id: str) -> str:
    """dev / test by a hash of the conversation id: fixed, and a conversation's tasks stay together."""
    bucket = int(hashlib.sha256(conversation_id.encode("utf-8")).hexdigest()[:8], 16) % TEST_EVERY
    return "test" if bucket == 0 else "dev"


@dataclass(frozen=True)
class Passage:
    document_id: str
    title: str
    text: str


@dataclass(frozen=True)
class MtragTask:
    task_id: str
    conversation_id: str
    earlier: tuple[str, ...]  # the earlier user questions, in order
    question: str  # the last user question, the one scored
    passages: tuple[Passage, ...]
    kind: str  # answerability: ANSWERABLE / PARTIAL / UNANSWERABLE / UNDERSPECIFIED
    multi_turn: str  # Follow-up / Clarification / N/A
    collection: str

    @property
    def split(self) -> str:
        return conversation_split(self.conversation_id)

    @property
    def references(self) -> frozenset[str]:
        return frozenset(p.document_id for p in self.passages)


def _first(value: Any) -> str:
    return str(value[0] if isinstance(value, list) and value else value or "")


def load_mtrag_un(path: Path) -> list[MtragTask]:
    """The tasks of MTRAG-UN's JSONL file, in file order."""
    out: list[MtragTask] = []
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if not line.strip():
                continue
            r = json.loads(line)
            users = [t["text"] for t in r["input"] if t.get("speaker") == "user"]
            if not users:
                continue
            passages = tuple(Passage(str(c["document_id"]), str(c.get("title") or ""), str(c["text"]))
                             for c in r.get("contexts") or [])
            out.append(MtragTask(str(r["task_id"]), str(r["conversation_id"]), tuple(users[:-1]), users[-1], passages,
                                 _first(r.get("answerability")), _first(r.get("Multi-Turn")),
                                 str(r.get("Collection", ""))))
    return out


def kb_passages(tasks: Iterable[MtragTask]) -> list[Passage]:
    """Every reference passage of the tasks, once each (by document_id), in id order."""
    seen: dict[str, Passage] = {}
    for t in tasks:
        for p in t.passages:
            seen.setdefault(p.document_id, p)
    return [seen[k] for k in sorted(seen)]


def passage_file_stem(document_id: str) -> str:
    """The KB file's name (without .md) for a passage: its document_id where that is a safe file
    name, else a safe form with a hash of the id."""
    safe = _SAFE.sub("_", document_id).strip("._") or "passage"
    if safe == document_id and len(safe) <= 120:
        return safe
    return f"{safe[:100]}-{hashlib.sha1(document_id.encode('utf-8')).hexdigest()[:10]}"


def passage_title(p: Passage) -> str:
    """The heading a passage is written under: its title, else the opening words of its text."""
    title = " ".join(p.title.split())
    if not title:
        first = next((line for line in p.text.splitlines() if line.strip()), "")
        title = " ".join(first.split()[:_TITLE_WORDS])
    return title.lstrip("#").strip() or p.document_id


def write_mtrag_kb(passages: Sequence[Passage], folder: Path) -> dict[str, str]:
    """One Markdown file per passage (its title as the heading); returns file stem -> document_id."""
    folder.mkdir(parents=True, exist_ok=True)
    names: dict[str, str] = {}
    for p in passages:
        stem = passage_file_stem(p.document_id)
        if names.get(stem, p.document_id) != p.document_id:
            raise ValueError(f"two passages share the file name {stem}")
        names[stem] = p.document_id
        (folder / f"{stem}.md").write_text(f"# {passage_title(p)}\n\n{p.text.strip()}\n", encoding="utf-8")
    return names


def cited_passages(d: Decision, names: dict[str, str]) -> list[str]:
    """The document_ids of the passages a reply cites (none for a refusal)."""
    if d.refused:
        return []
    return [names[stem] for s in d.sources if (stem := Path(s.source).stem) in names]


def score_mtrag(d: Decision, task: MtragTask, names: dict[str, str]) -> dict[str, Any]:
    """The last turn's scores: `right` is replied citing a reference passage (answerable, partial) or
    refused (unanswerable, underspecified); `asked_back` a refusal with AMBIGUOUS_QUESTION;
    `offered` a refusal with suggestions."""
    cited = cited_passages(d, names)
    from_reference = bool(set(cited) & task.references)
    right = from_reference if task.kind in ANSWERABLE else d.refused
    return {"right": right, "from_reference": from_reference, "cited": cited,
            "asked_back": d.refused and d.refusal_reason == ASK_BACK,
            "offered": d.refused and bool(d.suggestions)}


def peer_queries(task: MtragTask) -> dict[str, str]:
    """The plain MiniLM's three queries: the last question alone, every user question glued, the last two."""
    questions = [*task.earlier, task.question]
    return {"last": task.question, "glued": " ".join(questions), "last_two": " ".join(questions[-2:])}


def passage_scores(sims: np.ndarray, owner: np.ndarray, passages: int) -> np.ndarray:
    """(queries, passages) scores from (queries, chunks) cosines: a passage scores its best chunk."""
    best = np.full((passages, sims.shape[0]), -np.inf, dtype=np.float32)
    np.maximum.at(best, owner, sims.T.astype(np.float32))
    return best.T


def peer_ranks(scores: np.ndarray, passage_ids: Sequence[str], references: Sequence[frozenset[str]]) -> list[int | None]:
    """0-based rank of each query's best-ranked reference passage by score (ties keep id order),
    None when none of its references is in the KB."""
    order = np.argsort(-scores, axis=1, kind="stable")
    out: list[int | None] = []
    for row, refs in zip(order, references, strict=True):
        hit = [r for r, j in enumerate(row) if passage_ids[j] in refs]
        out.append(hit[0] if hit else None)
    return out


# -- tallies ---------------------------------------------------------------------------------

def _rate(k: int, n: int) -> float:
    return round(k / n, 4) if n else 0.0


def put(metrics: dict[str, float | int], key: str, items: Sequence[Any], pred: Callable[[Any], bool],
        split: Callable[[Any], str]) -> None:
    """`key` (all), `key_dev`, `key_test` as shares, with their counts (`key_right`, `key_n`, ...)."""
    for suffix, chosen in (("", items), ("_dev", [x for x in items if split(x) == "dev"]),
                           ("_test", [x for x in items if split(x) == "test"])):
        k = sum(bool(pred(x)) for x in chosen)
        metrics[f"{key}{suffix}"] = _rate(k, len(chosen))
        metrics[f"{key}{suffix}_right"] = k
        metrics[f"{key}{suffix}_n"] = len(chosen)


def counts(metrics: dict[str, float | int], key: str) -> str:
    """'0.944 (17/18)' of a figure `put` wrote, '–' when it counted nothing."""
    n = metrics.get(f"{key}_n", 0)
    return f"{metrics[key]:.3f} ({metrics[f'{key}_right']}/{n})" if n else "–"


def _row_split(r: Row) -> str:
    return r.split


# -- asking ----------------------------------------------------------------------------------

@dataclass
class Clock:
    """Wall time of every turn, first turns of a conversation apart from later ones."""

    first: list[float] = field(default_factory=list)
    later: list[float] = field(default_factory=list)

    def figures(self) -> dict[str, float]:
        if not self.first or not self.later:
            return {}
        p1, p2 = float(np.median(self.first)), float(np.median(self.later))
        return {"turn_ms_p50_first": round(p1, 1), "turn_ms_p50_later": round(p2, 1),
                "turn_later_over_first": round(p2 / p1, 2) if p1 else 0.0}


def ask_in(app: App, key: ConversationKey, text: str, clock: Clock | None = None, first: bool = False) -> Decision:
    """One turn of a conversation (its earlier turns are the history the pipeline loads)."""
    idx = app.pipeline.index
    if isinstance(idx, RecordingIndex):
        idx.last, idx.taken = [], False
    t0 = time.perf_counter()
    d = app.ask(Incoming(key, "bench-user", text))
    if clock is not None:
        (clock.first if first else clock.later).append(1000 * (time.perf_counter() - t0))
    return d


def _progress(tag: str, done: int, total: int) -> None:
    if done == total or done % 50 == 0:
        print(f"  [{NAME}/{tag}] {done}/{total}", file=sys.stderr, flush=True)


# -- pass 1: docs conversations --------------------------------------------------------------

def run_docs_conversations(app: App, conversations: Sequence[DocsConversation], result: SuiteResult,
                           dump: Dump | None) -> None:
    """Ask each conversation in one ConversationKey; rows go to three passes (first turns,
    follow-ups, self-contained later questions)."""
    first, follow, new = PassResult("docs_first", "reply"), PassResult("docs_follow_ups", "reply"), \
        PassResult("docs_new", "reply")
    t0 = time.perf_counter()
    for ci, c in enumerate(conversations):
        key = ConversationKey("bench", f"{NAME}:docs:{c.id}")
        prev: DocsTurn | None = None
        prev_answer = ""
        for ti, turn in enumerate(c.turns):
            d = ask_in(app, key, turn.ask)
            s = score_docs_turn(d, turn, prev, prev_answer)
            target = first if ti == 0 else (follow if turn.follow_up else new)
            row = Row(NAME, target.name, ci * 10 + ti, turn.ask, "reply", d, split=c.split,
                      extra={"conversation": c.id, "turn": ti + 1, "section": f"{turn.file} / {turn.heading}",
                             "previous_section": f"{prev.file} / {prev.heading}" if prev else "",
                             "cited": [f"{Path(x.source).name} / {_leaf(x.heading)}" for x in d.sources],
                             "retrieval_query": d.retrieval_query, **s})
            target.rows.append(row)
            if dump:
                dump(row.to_json())
            prev, prev_answer = turn, d.answer
        _progress("docs", ci + 1, len(conversations))
    seconds = time.perf_counter() - t0
    for p in (first, follow, new):
        p.seconds = seconds * p.n / max(1, first.n + follow.n + new.n)
    result.passes += [first, follow, new]
    m = result.metrics
    put(m, "docs_first_from_section", first.rows, lambda r: r.extra["right"], _row_split)
    put(m, "docs_first_refused_offering_section", [r for r in first.rows if not r.extra["right"]],
        lambda r: r.extra["offered"], _row_split)
    put(m, "docs_follow_ups_from_section", follow.rows, lambda r: r.extra["right"], _row_split)
    put(m, "docs_follow_ups_refused_offering_section", [r for r in follow.rows if not r.extra["right"]],
        lambda r: r.extra["offered"], _row_split)
    moving = [r for r in follow.rows if r.extra["moves_section"]]
    put(m, "docs_follow_ups_new_section_from_section", moving, lambda r: r.extra["right"], _row_split)
    put(m, "docs_follow_ups_repeating_previous", moving, lambda r: r.extra["repeated"], _row_split)
    put(m, "docs_new_from_section", new.rows, lambda r: r.extra["right"], _row_split)
    put(m, "docs_new_repeating_previous", new.rows, lambda r: r.extra["repeated"], _row_split)
    put(m, "docs_follow_ups_led_by_section", follow.rows, lambda r: r.extra["led"], _row_split)
    rows = first.rows + follow.rows + new.rows
    m["docs_records_with_resolved_question"] = sum(r.extra["resolved_question"] is not None for r in rows)
    m["docs_follow_ups_resolved_differently"] = sum(r.extra["resolution_differs"] for r in follow.rows)
    m["docs_new_resolved_differently"] = sum(r.extra["resolution_differs"] for r in new.rows)
    m["docs_first_resolved_differently"] = sum(r.extra["resolution_differs"] for r in first.rows)
    m["docs_conversations"] = len(conversations)


# -- pass 2: MTRAG-UN ------------------------------------------------------------------------

def _group(task: MtragTask) -> str:
    return "answerable" if task.kind in ANSWERABLE else task.kind.lower()


def run_mtrag(app: App, tasks: Sequence[MtragTask], names: dict[str, str], result: SuiteResult,
              dump: Dump | None, clock: Clock) -> None:
    """Each task in a conversation of its own: earlier user questions, then the last one (scored)."""
    passes = {g: PassResult(f"mtrag_{g}", "reply" if g == "answerable" else "refuse")
              for g in ("answerable", "unanswerable", "underspecified")}
    t0 = time.perf_counter()
    earlier_turns = 0
    for i, task in enumerate(tasks):
        key = ConversationKey("bench", f"{NAME}:mtrag:{task.task_id}")
        t_task = time.perf_counter()
        for j, q in enumerate(task.earlier):
            ask_in(app, key, q, clock, first=j == 0)
        earlier_turns += len(task.earlier)
        d = ask_in(app, key, task.question, clock, first=not task.earlier)
        s = score_mtrag(d, task, names)
        p = passes[_group(task)]
        p.seconds += time.perf_counter() - t_task
        row = Row(NAME, p.name, i, task.question, p.expected, d, split=task.split,
                  gold_doc=",".join(sorted(task.references)),
                  extra={"task_id": task.task_id, "kind": task.kind, "multi_turn": task.multi_turn,
                         "collection": task.collection, "earlier_turns": len(task.earlier),
                         "retrieval_query": d.retrieval_query,
                         "resolution_differs": resolution_differs(d, task.question),
                         "resolved_question": resolved_question(d), **s})
        p.rows.append(row)
        if dump:
            dump(row.to_json())
        _progress("mtrag", i + 1, len(tasks))
    result.passes += list(passes.values())
    result.notes.append(f"MTRAG-UN: {len(tasks)} tasks, {earlier_turns} earlier user turns asked before their last "
                        f"question, {time.perf_counter() - t0:.0f}s")
    m = result.metrics
    ans = passes["answerable"].rows
    put(m, "mtrag_answerable_from_reference", ans, lambda r: r.extra["right"], _row_split)
    put(m, "mtrag_answerable_follow_ups_from_reference", [r for r in ans if r.extra["multi_turn"] == "Follow-up"],
        lambda r: r.extra["right"], _row_split)
    put(m, "mtrag_answerable_only_from_reference", [r for r in ans if r.extra["kind"] == "ANSWERABLE"],
        lambda r: r.extra["right"], _row_split)
    put(m, "mtrag_partial_from_reference", [r for r in ans if r.extra["kind"] == "PARTIAL"],
        lambda r: r.extra["right"], _row_split)
    put(m, "mtrag_answerable_replied", ans, lambda r: r.replied, _row_split)
    put(m, "mtrag_unanswerable_refused", passes["unanswerable"].rows, lambda r: not r.replied, _row_split)
    under = passes["underspecified"].rows
    put(m, "mtrag_underspecified_refused", under, lambda r: not r.replied, _row_split)
    put(m, "mtrag_underspecified_asked_back", under, lambda r: r.extra["asked_back"], _row_split)
    put(m, "mtrag_underspecified_offered_suggestions", under, lambda r: r.extra["offered"], _row_split)
    every = [r for p in passes.values() for r in p.rows]
    m["mtrag_asked_back_answerable"] = sum(r.extra["asked_back"] for r in ans)
    m["mtrag_asked_back_unanswerable"] = sum(r.extra["asked_back"] for r in passes["unanswerable"].rows)
    for mt in MULTI_TURN:
        tag = mt.lower().replace("-", "_").replace("/", "")
        put(m, f"mtrag_right_{tag}", [r for r in every if r.extra["multi_turn"] == mt],
            lambda r: r.extra["right"], _row_split)
    m["mtrag_last_turns_resolved_differently"] = sum(r.extra["resolution_differs"] for r in every)
    m["mtrag_follow_up_last_turns_resolved_differently"] = sum(
        r.extra["resolution_differs"] for r in every if r.extra["multi_turn"] == "Follow-up")
    m["mtrag_tasks"] = len(every)


# -- pass 3: the plain MiniLM peer -----------------------------------------------------------

def passage_matrix(app: App, names: dict[str, str], passages: Sequence[Passage]) -> tuple[list[str], np.ndarray, str]:
    """(document_ids, unit vectors, how): one vector per chunk of each ingested passage, read from
    the chunk index (what groundbot searches), else each passage embedded whole."""
    try:
        tbl = app.index.table()
        got = tbl.search().where("kind = 'doc'").select(["source", "vector"]).limit(None).to_arrow()
        col = got.column("vector").combine_chunks()
        vecs = np.asarray(col.flatten().to_numpy(zero_copy_only=False), dtype=np.float32).reshape(len(col), -1)
        ids = [names.get(Path(s).stem, "") for s in got.column("source").to_pylist()]
        keep = [i for i, x in enumerate(ids) if x]
        if keep:
            return [ids[i] for i in keep], vecs[keep], "the ingested chunks' vectors (a passage's best chunk)"
    except Exception as exc:  # the table's layout is storage's business: fall back to embedding
        print(f"  [{NAME}] chunk vectors not read ({type(exc).__name__}: {exc}); embedding passages", file=sys.stderr)
    texts = [f"{passage_title(p)}\n{p.text}" for p in passages]
    return [p.document_id for p in passages], app.embedder.embed_passages(texts), "each passage embedded whole"


def run_peer(app: App, tasks: Sequence[MtragTask], names: dict[str, str], passages: Sequence[Passage],
             result: SuiteResult) -> None:
    """A plain MiniLM that never refuses: is a reference passage its top-1 / top-5 among all passages?"""
    asked = [t for t in tasks if t.kind in ANSWERABLE and t.references]
    if not asked:
        return
    chunk_ids, vecs, how = passage_matrix(app, names, passages)
    # a passage's score is its best chunk's: collapse chunks to passages by taking the maximum
    ids = sorted(set(chunk_ids))
    at = {x: i for i, x in enumerate(ids)}
    owner = np.asarray([at[x] for x in chunk_ids])
    m = result.metrics
    for name in PEER_QUERIES:
        qs = app.embedder.embed_queries([normalize_text(peer_queries(t)[name]) for t in asked])
        ranks = peer_ranks(passage_scores(qs @ vecs.T, owner, len(ids)), ids, [t.references for t in asked])
        pairs = list(zip(asked, ranks, strict=True))
        put(m, f"peer_{name}_top1", pairs, lambda p: p[1] == 0, lambda p: p[0].split)
        put(m, f"peer_{name}_top5", pairs, lambda p: p[1] is not None and p[1] < 5, lambda p: p[0].split)
        put(m, f"peer_{name}_top1_follow_ups", [p for p in pairs if p[0].multi_turn == "Follow-up"],
            lambda p: p[1] == 0, lambda p: p[0].split)
    result.notes.append(f"peer: plain {app.embedder.name} (no gate, no reader, never refuses) over {len(ids)} passages, "
                        f"{how}; queries: the last question alone, every user question glued, the last two glued; "
                        f"{len(asked)} answerable / partial tasks")


# -- pass 4: retrieval recall of MTRAG's rewrites, where their passages are in the KB ----------

RECALL_LABELS = (("raw", "the last question alone"), ("last_two", "the last two glued"),
                 ("selected", "the question with the selected words"), ("shipped", "groundbot's fused searches"),
                 ("human", "the human rewrite"))


def run_rewrite_recall(app: App, names: dict[str, str], passages: Sequence[Passage], result: SuiteResult) -> None:
    """MTRAG's rewrite turns whose qrels name a passage of the MTRAG-UN KB: is one of them among the
    top 5 passages of the plain MiniLM (each query, the peer's passage matrix) and of groundbot's own
    fused searches (core/retrieve/search.py over the chunk index, the hits' passages in order)?"""
    from bench.rewrites import load_mtrag_rewrites, mtrag_qrels, prior_turns
    from core.retrieve.resolve import earlier, resolve
    from core.retrieve.search import search

    if not (rewrites.MTRAG_REWRITES_DIR / "govt_qrels.tsv").is_file():
        return
    qrels = mtrag_qrels()
    kb = {p.document_id for p in passages}
    items = [(r, refs) for r in load_mtrag_rewrites() if r.follow_up and (refs := frozenset(qrels.get(r.id, set()) & kb))]
    if not items:
        return
    cfg = app.config.core.retrieval
    selector = app.pipeline.models.term_selector
    readings = [resolve(r.question, earlier(prior_turns(r), None, cfg.history_turns), selector, cfg.term_threshold)
                for r, _ in items]
    texts = {"raw": [r.question for r, _ in items],
             "last_two": [" ".join([*(q for q, _ in r.prior[-1:]), r.question]) for r, _ in items],
             "selected": [x.resolved for x in readings], "human": [r.rewrite for r, _ in items]}
    chunk_ids, vecs, _ = passage_matrix(app, names, passages)
    ids = sorted(set(chunk_ids))
    at = {x: i for i, x in enumerate(ids)}
    owner = np.asarray([at[x] for x in chunk_ids])
    m = result.metrics
    for name, queries in texts.items():
        qs = app.embedder.embed_queries([normalize_text(q) for q in queries])
        ranks = peer_ranks(passage_scores(qs @ vecs.T, owner, len(ids)), ids, [refs for _, refs in items])
        put(m, f"recall5_{name}", list(zip(items, ranks, strict=True)), lambda p: p[1] is not None and p[1] < 5,
            lambda p: p[0][0].split)
    found = []
    for x in readings:
        _, _, hits = search(x, app.embedder, app.index, 20, None, cfg.rrf_k)
        order = list(dict.fromkeys(names[stem] for h in hits if (stem := Path(h.source).stem) in names))
        found.append(order[:5])
    put(m, "recall5_shipped", list(zip(items, found, strict=True)), lambda p: bool(set(p[1]) & p[0][1]),
        lambda p: p[0][0].split)
    run_rewrite_ceiling(app, items, names, result)
    result.notes.append(f"MTRAG rewrites: {len(items)} follow-ups whose qrels name one of the {len(kb)} MTRAG-UN passages "
                        f"(the term selector trained on the train split's conversations: the all column holds them)")


class HumanRewrites:
    """A language model's rewrite at its port (core.ports.Rewriter) that returns the person's
    rewrite of each question: the ceiling of a rewriting model on these conversations."""

    def __init__(self, rewrites: dict[str, str]) -> None:
        self.rewrites = rewrites

    def rewrite(self, question: str, earlier: Sequence[Any]) -> str:
        return self.rewrites.get(question.strip(), question)


def run_rewrite_ceiling(app: App, items: Sequence[tuple[Any, frozenset[str]]], names: dict[str, str],
                        result: SuiteResult) -> None:
    """The same MTRAG rewrite follow-ups played turn by turn through the pipeline (their earlier user
    questions first), with the shipped reading and with a stand-in model returning the human
    rewrites: replied citing a passage the qrels name."""
    from bench.rewrites import load_mtrag_rewrites
    from core.retrieve.resolve import well_formed

    every = load_mtrag_rewrites()
    human = {r.question.strip(): r.rewrite for r in every}
    saved = app.pipeline.models
    m = result.metrics
    try:
        for who, rewriter in (("shipped", None), ("human", HumanRewrites(human))):
            app.pipeline.models = replace(saved, rewriter=rewriter)
            rows, shown = [], []
            for r, refs in items:
                key = ConversationKey("bench", f"{NAME}:rewrites:{who}:{r.id}")
                turns = [ask_in(app, key, q) for q, _ in r.prior]
                d = ask_in(app, key, r.question)
                shown += [t.resolved_question for t in [*turns, d] if t.resolved_question]
                rows.append((r, bool(set(cited_passages(d, names)) & refs)))
            put(m, f"rewrites_{who}_from_reference", rows, lambda p: p[1], lambda p: p[0].split)
            m[f"rewrites_{who}_shown"] = len(shown)
            m[f"rewrites_{who}_shown_malformed"] = sum(not well_formed(x) for x in shown)
    finally:
        app.pipeline.models = saved


# -- the suite -------------------------------------------------------------------------------

SPLIT_HEAD = ["| figure | all | dev | test |", "|---|---:|---:|---:|"]


def split_row(m: dict[str, Any]) -> Callable[[str, str], str]:
    """A table row of one figure `put` wrote: all, dev, test (counts beside the shares)."""
    return lambda label, key: f"| {label} | {counts(m, key)} | {counts(m, key + '_dev')} | {counts(m, key + '_test')} |"


def docs_conversation_rows(m: dict[str, Any], title: str) -> list[str]:
    """The docs conversations' table (this suite's, and the loose suite's docs asked loosely)."""
    row = split_row(m)
    return [title, "", *SPLIT_HEAD,
            row("first questions answered from their section", "docs_first_from_section"),
            row("... the others: refused, offering the section meant as a suggestion",
                "docs_first_refused_offering_section"),
            row("follow-ups answered from the section meant", "docs_follow_ups_from_section"),
            row("... the others: refused, offering the section meant as a suggestion",
                "docs_follow_ups_refused_offering_section"),
            row("follow-ups meaning another section: answered from it", "docs_follow_ups_new_section_from_section"),
            row("... answered with the previous turn's section instead", "docs_follow_ups_repeating_previous"),
            row("follow-ups opening with their section", "docs_follow_ups_led_by_section"),
            row("self-contained later questions answered from their section", "docs_new_from_section"),
            row("... answered with the previous turn's section instead", "docs_new_repeating_previous"), ""]


def _tables(m: dict[str, Any]) -> list[str]:
    """The Markdown tables of the suite's figures (counts beside the shares)."""
    row, head = split_row(m), SPLIT_HEAD
    lines: list[str] = []
    if "docs_first_from_section_n" in m:
        lines += [*docs_conversation_rows(m, "**Docs conversations**"),
                  f"Records with a `resolved_question`: {m['docs_records_with_resolved_question']}; resolved to other "
                  f"words: follow-ups {m['docs_follow_ups_resolved_differently']}, self-contained later questions "
                  f"{m['docs_new_resolved_differently']}, first questions {m['docs_first_resolved_differently']}.", ""]
    if "mtrag_tasks" in m:
        lines += ["**MTRAG-UN, last turns**", "", *head,
                  row("answerable + partial: replied citing a reference passage", "mtrag_answerable_from_reference"),
                  row("... of them follow-ups", "mtrag_answerable_follow_ups_from_reference"),
                  row("answerable only", "mtrag_answerable_only_from_reference"),
                  row("partial only", "mtrag_partial_from_reference"),
                  row("answerable + partial: replied at all", "mtrag_answerable_replied"),
                  row("unanswerable: refused", "mtrag_unanswerable_refused"),
                  row("underspecified: refused (asked back or not)", "mtrag_underspecified_refused"),
                  row(f"underspecified: asked back ({ASK_BACK})", "mtrag_underspecified_asked_back"),
                  row("underspecified: refusal offering suggestions", "mtrag_underspecified_offered_suggestions"),
                  row("right, Multi-Turn = Follow-up", "mtrag_right_follow_up"),
                  row("right, Multi-Turn = Clarification", "mtrag_right_clarification"),
                  row("right, Multi-Turn = N/A", "mtrag_right_na"), ""]
        lines.append(f"Asked back although answerable: {m['mtrag_asked_back_answerable']}, although unanswerable: "
                     f"{m['mtrag_asked_back_unanswerable']}; last turns resolved to other words: "
                     f"{m['mtrag_last_turns_resolved_differently']} (follow-ups "
                     f"{m['mtrag_follow_up_last_turns_resolved_differently']}).")
        if "turn_ms_p50_first" in m:
            lines.append(f"Turn wall time p50: first turns {m['turn_ms_p50_first']} ms, later turns "
                         f"{m['turn_ms_p50_later']} ms ({m['turn_later_over_first']}x).")
        lines.append("")
    if "peer_last_top1_n" in m:
        lines += ["**Peer: plain MiniLM, answerable + partial tasks**", "", *head]
        for name, label in (("last", "last question alone"), ("glued", "every user question glued"),
                            ("last_two", "last two glued")):
            lines += [row(f"top-1, {label}", f"peer_{name}_top1"), row(f"top-5, {label}", f"peer_{name}_top5"),
                      row(f"top-1, {label}, follow-ups", f"peer_{name}_top1_follow_ups")]
        lines.append("")
    if any(k.startswith(("canard_", "mtrag_rewrites_")) for k in m):
        lines += ["**Reading: words the human rewrite adds to the question vs words the reading adds "
                  "(stemmed content words, micro-averaged over follow-ups; dev / test conversations)**", "",
                  "| data | reading | split | precision | recall | F1 | left alone where the rewrite is the question |",
                  "|---|---|---|---:|---:|---:|---:|"]
        for data in ("canard", "mtrag_rewrites"):
            for who in ("condense", "selector"):
                for split in ("dev", "test"):
                    k, e = f"{data}_{who}", f"_{split}"
                    if f"{k}_f1{e}" in m:
                        lines.append(f"| {data} | {who} | {split} | {m[f'{k}_precision{e}']:.3f} | "
                                     f"{m[f'{k}_recall{e}']:.3f} | {m[f'{k}_f1{e}']:.3f} | {m[f'{k}_left_alone{e}']:.3f} "
                                     f"({m[f'{k}_left_alone_right{e}']}/{m[f'{k}_left_alone_n{e}']}) |")
        for data in ("canard", "mtrag_rewrites"):
            if f"{data}_human_rewrites_well_formed" in m:
                lines.append(f"\n{data}: human rewrites taken as well formed {m[f'{data}_human_rewrites_well_formed']:.3f} "
                             f"of {m[f'{data}_human_rewrites_well_formed_n']}.")
        lines.append("")
    if "recall5_raw_n" in m:
        lines += ["**MTRAG rewrites, retrieval recall@5 where the passages are known (the MTRAG-UN passages)**", "",
                  *head] + [row(f"recall@5, {label}", f"recall5_{name}") for name, label in RECALL_LABELS]
        if "rewrites_human_from_reference_n" in m:
            lines += [row("replied citing such a passage: shipped reading", "rewrites_shipped_from_reference"),
                      row("... a stand-in model returning the human rewrite", "rewrites_human_from_reference"), "",
                      f"Readings shown to the user: shipped {m['rewrites_shipped_shown']} "
                      f"({m['rewrites_shipped_shown_malformed']} malformed), with the stand-in model "
                      f"{m['rewrites_human_shown']} ({m['rewrites_human_shown_malformed']} malformed)."]
        lines.append("")
    return lines


def run_conversations(config: Config, *, embedder: Any = None, limit: int | None = None, dump: Dump | None = None,
                      mtrag_un: Path = MTRAG_UN_FILE, canard: Path | None = None, rewrites: Path | None = None,
                      seed: int = 0) -> SuiteResult:
    """The docs conversations, MTRAG-UN with its peer rows, and the resolution figures; `limit`
    caps the conversations of each pass (docs conversations, MTRAG-UN tasks, CANARD and MTRAG
    rewrite questions)."""
    t0 = time.perf_counter()
    result = SuiteResult(NAME)
    cfg = config.changed(generator__kind="extractive")
    conversations = load_docs_conversations()[:limit] if limit is not None else load_docs_conversations()
    result.notes.append(f"generator=extractive; docs conversations: {CONVERSATIONS.relative_to(ROOT)} "
                        f"({len(conversations)} conversations, KB = docs/); a right answer cites the section meant")
    with temp_app(cfg, embedder=embedder, prefix=f"{NAME}-docs") as app:
        ingest_kb(app, DOCS, result)
        run_docs_conversations(app, conversations, result, dump)
    ingest_seconds = result.ingest_seconds
    if mtrag_un.is_file():
        every = load_mtrag_un(mtrag_un)
        tasks = ds.sample(every, limit, seed)
        passages = kb_passages(every)
        clock = Clock()
        with temp_app(cfg, embedder=embedder, prefix=f"{NAME}-mtrag") as app:
            kb = app.config.paths.data_dir.parent / "mtrag"
            names = write_mtrag_kb(passages, kb)
            ingest_kb(app, kb, result)
            result.notes.append(f"MTRAG-UN KB: the {len(passages)} distinct reference passages of all {len(every)} tasks, "
                                f"one Markdown file each (title, else the passage's opening words, as its heading); "
                                f"split: sha256(conversation_id) % {TEST_EVERY} == 0 -> test; tasks asked: {len(tasks)} "
                                f"(seeded shuffle, seed {seed})")
            run_mtrag(app, tasks, names, result, dump, clock)
            run_peer(app, tasks, names, passages, result)
            run_rewrite_recall(app, names, passages, result)
        result.metrics.update(clock.figures())
        ingest_seconds += result.ingest_seconds
    else:
        result.notes.append(f"MTRAG-UN skipped: {mtrag_un} not found (see ../shared/datasets/README.md)")
    result.ingest_seconds = ingest_seconds
    run_resolution(result, canard=canard, rewrites=rewrites, limit=limit, turns=cfg.core.retrieval.history_turns)
    result.metrics["n"] = sum(p.n for p in result.passes)  # the turns scored (docs turns and MTRAG-UN last turns)
    result.tables = _tables(result.metrics)
    result.seconds = time.perf_counter() - t0
    return result
