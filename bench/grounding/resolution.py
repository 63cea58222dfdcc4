"""Resolution figures of the conversations suite: does a follow-up resolver add to a question the
words a person adds when rewriting it into a standalone question, and leave alone the questions
that need nothing?

Data: CANARD's dev set (QuAC follow-ups with human rewrites; the earlier turns are the article and
section titles, then questions and answers) and MTRAG's human rewrites (the earlier user questions
only: no agent answers, and no corpora, so no retrieval recall here). For each follow-up (a
question after an earlier question): the stemmed content words the human rewrite adds to the
question against the words the resolver's output adds; precision, recall and F1 micro-averaged
over the follow-ups. Left alone: of the questions with earlier turns (CANARD's first questions have
their article's titles) whose rewrite is the question itself, the share whose resolved form adds no
content word.

Resolvers: the condensing groundbot shipped before the resolver (`core/retrieve/condense.py` at
583e54f, copied here as `condense`: the earlier questions glued in front of a question its word
list takes for a follow-up) always, as the baseline; the follow-up resolver
`core.retrieve.resolve.resolve(question, history, scope, turns)` when that module exists. Its
history is the earlier turns, oldest first, as `core.messages.PriorTurn(question, answer)` where
that class exists (else (question, answer) pairs); for CANARD the first turn is (article title,
section title), the topic QuAC's dialogues are about.
"""

from __future__ import annotations

import importlib
import inspect
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bench import datasets as ds
from bench.grounding.harness import SuiteResult
from core.text.lexicon import content_terms
from core.text.normalize import normalize_text, words

RESOLVE_MODULE = "core.retrieve.resolve"
CANARD_FILE = ds.DATASETS / "canard-dev" / "dev.json"
MTRAG_REWRITES_DIR = ds.DATASETS / "mtrag-rewrites"
MTRAG_COLLECTIONS = ("clapnq", "cloud", "fiqa", "govt")
_USER = "|user|: "
# the resolved form's text, by the first of these a resolution has (a plain str is taken as it is)
_TEXT_FIELDS = ("resolved_question", "resolved", "standalone", "rewrite", "query", "text", "question")

Prior = Sequence[tuple[str, str]]
Resolver = Callable[[str, Prior], str]


@dataclass(frozen=True)
class Rewrite:
    id: str
    question: str
    rewrite: str  # the human rewrite into a standalone question
    prior: tuple[tuple[str, str], ...]  # the earlier turns as (question, answer), oldest first
    follow_up: bool = True  # an earlier question was asked (CANARD: not the dialogue's first question)

    @property
    def unchanged(self) -> bool:
        """The human rewrite is the question itself (it needs nothing from the earlier turns)."""
        return _plain(self.rewrite) == _plain(self.question)


def _plain(text: str) -> str:
    return normalize_text(text).strip(" ?!.")


def load_canard(path: Path) -> list[Rewrite]:
    """CANARD records; History = [article title, section title, q1, a1, q2, a2, ...]."""
    out: list[Rewrite] = []
    for r in json.loads(path.read_text(encoding="utf-8")):
        h = [str(x) for x in r["History"]]
        pairs = [(h[i], h[i + 1] if i + 1 < len(h) else "") for i in range(2, len(h), 2)]
        topic = [(h[0], h[1] if len(h) > 1 else "")] if h else []
        out.append(Rewrite(f"{r['QuAC_dialog_id']}#{r['Question_no']}", r["Question"], r["Rewrite"],
                           tuple(topic + pairs), follow_up=bool(pairs)))
    return out


def _jsonl(path: Path) -> dict[str, str]:
    rows = (json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip())
    return {r["_id"]: r["text"] for r in rows}


def _user_turns(text: str) -> list[str]:
    return [t.strip() for t in ("\n" + text).split("\n" + _USER) if t.strip()]


def load_mtrag_rewrites(folder: Path) -> list[Rewrite]:
    """MTRAG's turns: the last question (`lastturn`), its human rewrite, and the earlier user
    questions (the glued `questions` text without its last turn); no answers are given."""
    out: list[Rewrite] = []
    for c in MTRAG_COLLECTIONS:
        glued = _jsonl(folder / f"{c}_questions.jsonl")
        last = _jsonl(folder / f"{c}_lastturn.jsonl")
        rewrite = _jsonl(folder / f"{c}_rewrite.jsonl")
        for k in sorted(last, key=lambda x: (x.split("<::>")[0], int(x.split("<::>")[-1]))):
            earlier = _user_turns(glued.get(k, ""))[:-1]
            out.append(Rewrite(f"{c}:{k}", last[k].removeprefix(_USER).strip(),
                               rewrite.get(k, last[k]).removeprefix(_USER).strip(), tuple((q, "") for q in earlier),
                               follow_up=bool(earlier)))
    return out


def added_terms(text: str, question: str) -> frozenset[str]:
    """The content words (stemmed, lower-cased) `text` has that `question` has not."""
    return frozenset(content_terms(text)) - frozenset(content_terms(question))


def score(items: Sequence[Rewrite], outputs: Sequence[str]) -> dict[str, float | int]:
    """Added-word precision / recall / F1 over the follow-ups (micro-averaged), and the share left
    alone (adding no word) of the questions with earlier turns whose rewrite is the question itself."""
    tp = predicted = gold = 0
    alone = unchanged = n = 0
    for item, out in zip(items, outputs, strict=True):
        if not item.prior:
            continue
        mine, theirs = added_terms(out, item.question), added_terms(item.rewrite, item.question)
        if item.follow_up:
            n += 1
            tp += len(mine & theirs)
            predicted += len(mine)
            gold += len(theirs)
        if item.unchanged:
            unchanged += 1
            alone += not mine
    p = tp / predicted if predicted else 0.0
    r = tp / gold if gold else 0.0
    f1 = 2 * p * r / (p + r) if p + r else 0.0
    return {"precision": round(p, 4), "recall": round(r, 4), "f1": round(f1, 4), "n": n,
            "left_alone": round(alone / unchanged, 4) if unchanged else 0.0, "left_alone_right": alone,
            "left_alone_n": unchanged}


# -- the baseline: core/retrieve/condense.py as shipped at 583e54f (since replaced by the resolver) --
_ANAPHORA = frozenset(["it", "its", "this", "that", "these", "those", "they", "them", "their", "there", "he", "she",
                       "his", "her", "same", "above", "او", "آن", "این", "آنها", "اینها", "همین", "همان"])
_LEADS = ("and ", "also ", "what about ", "how about ", "and?", "و ", "پس ")


def condense(question: str, history: Prior, turns: int) -> str:
    """The question, prefixed by the last `turns` earlier questions when it reads as a follow-up
    (a pronoun of _ANAPHORA, or one of _LEADS first)."""
    norm = normalize_text(question)
    follow = bool(words(norm)) and (bool(_ANAPHORA & set(words(norm))) or norm.startswith(_LEADS))
    if not history or turns <= 0 or not follow:
        return question
    return " ".join([*(q for q, _ in history[-turns:] if q.strip()), question])


def condense_resolver(turns: int) -> Resolver:
    """The shipped condensing as a resolver."""
    return lambda question, prior: condense(question, prior, turns)


def resolution_text(resolution: Any) -> str:
    """The resolved question's text of whatever `resolve` returns (a str, or an object or mapping
    with one of _TEXT_FIELDS)."""
    if isinstance(resolution, str):
        return resolution
    for name in _TEXT_FIELDS:
        value = resolution.get(name) if isinstance(resolution, dict) else getattr(resolution, name, None)
        if isinstance(value, str):
            return value
    raise TypeError(f"cannot read a resolved question from {type(resolution).__name__}; expected one of {_TEXT_FIELDS}")


def _history(prior: Prior) -> list[Any]:
    """The earlier turns in the form the pipeline hands the resolver: PriorTurn where core has it."""
    try:
        from core.messages import PriorTurn  # type: ignore[attr-defined]
    except ImportError:
        return list(prior)
    return [PriorTurn(question=q, answer=a) for q, a in prior]


def load_resolver(module: str = RESOLVE_MODULE, turns: int = 2) -> tuple[Resolver | None, str]:
    """(resolver, note): `module.resolve` wrapped to return text, or None and why it is skipped.
    It is called as the pipeline calls it: resolve(question, history, None, turns) when its
    signature has a `turns` parameter, else resolve(question, history)."""
    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name and module.startswith(exc.name):
            return None, f"resolver skipped: {module} does not exist yet"
        return None, f"resolver skipped: {module} failed to import ({exc})"
    except Exception as exc:  # a module being written may not import yet: say so, measure the rest
        return None, f"resolver skipped: {module} failed to import ({type(exc).__name__}: {exc})"
    fn = getattr(mod, "resolve", None)
    if not callable(fn):
        return None, f"resolver skipped: {module} has no resolve()"
    try:
        signature = str(inspect.signature(fn))
    except (TypeError, ValueError):
        signature = "(...)"

    try:
        with_turns = "turns" in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        with_turns = False

    def resolver(question: str, prior: Prior) -> str:
        history = _history(prior)
        return resolution_text(fn(question, history, None, turns) if with_turns else fn(question, history))

    how = f"(question, history, None, {turns})" if with_turns else "(question, history)"
    return resolver, f"resolver: {module}.resolve{signature}, called as resolve{how}"


def run_resolver(resolver: Resolver, items: Sequence[Rewrite]) -> tuple[list[str], list[float]]:
    """Each item's resolved text and the milliseconds it took."""
    outs: list[str] = []
    ms: list[float] = []
    for item in items:
        t0 = time.perf_counter()
        outs.append(resolver(item.question, item.prior))
        ms.append(1000 * (time.perf_counter() - t0))
    return outs, ms


def run_resolution(result: SuiteResult, *, canard: Path | None = None, rewrites: Path | None = None,
                   limit: int | None = None, turns: int = 2, module: str = RESOLVE_MODULE) -> None:
    """Add the resolution figures of CANARD and MTRAG's rewrites to `result` (skipping, with a note,
    what is missing: a data file, or the resolver)."""
    canard = CANARD_FILE if canard is None else canard
    rewrites = MTRAG_REWRITES_DIR if rewrites is None else rewrites
    resolver, note = load_resolver(module, turns)
    result.notes.append(note)
    data: list[tuple[str, list[Rewrite]]] = []
    if canard.is_file():
        data.append(("canard", load_canard(canard)))
    else:
        result.notes.append(f"CANARD skipped: {canard} not found")
    if (rewrites / f"{MTRAG_COLLECTIONS[0]}_lastturn.jsonl").is_file():
        data.append(("mtrag_rewrites", load_mtrag_rewrites(rewrites)))
        result.notes.append("MTRAG rewrites: no corpora are given, so retrieval recall@5 with the raw, glued and "
                            "resolved queries is not measured; only the words each resolver adds")
    else:
        result.notes.append(f"MTRAG rewrites skipped: {rewrites} not found")
    m = result.metrics
    for name, items in data:
        items = items[:limit] if limit is not None else items
        resolvers: list[tuple[str, Resolver]] = [("condense", condense_resolver(turns))]
        if resolver is not None:
            resolvers.append(("resolver", resolver))
        for who, fn in resolvers:
            try:
                outs, ms = run_resolver(fn, items)
            except Exception as exc:  # a resolver still being written must not sink the suite
                result.notes.append(f"{name}: {who} failed ({type(exc).__name__}: {exc}); its figures are left out")
                continue
            for k, v in score(items, outs).items():
                m[f"{name}_{who}_{k}"] = v
            if who == "resolver" and ms:
                m[f"{name}_resolver_ms_p50"] = round(float(np.median(ms)), 3)
        result.notes.append(f"{name}: {sum(i.follow_up for i in items)} follow-ups (an earlier question asked); "
                            f"{sum(bool(i.prior) and i.unchanged for i in items)} questions with earlier turns "
                            f"rewritten as asked; turns read: history_turns={turns}")
