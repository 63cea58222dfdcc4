"""The term selector's examples: each follow-up of CANARD and MTRAG's rewrites, its earlier turns
laid out as the running bot lays them out (core/retrieve/terms.py), and a label per earlier word:
1 when the person's rewrite adds that word to the question (QuReTeC's labels: Voskarides et al.,
SIGIR 2020), else 0. Split by conversation (bench/rewrites.py): train, dev (threshold and
figures), test (reported, never tuned on).

CANARD's earlier turns are QuAC's questions and answers, with the article and section title as the
section every answer came from (as groundbot's earlier turns carry the section that answered
them); MTRAG's are the earlier user questions alone (no answers are given).
"""

from __future__ import annotations

from dataclasses import dataclass

from bench.rewrites import Rewrite, load_canard, load_mtrag_rewrites, prior_turns
from core.retrieve.terms import asked_terms, candidate, history_words, question_words, terms_of
from core.text.lexicon import content_terms

TURNS = 2  # the earlier turns the pipeline hands a follow-up ([retrieval] history_turns)


@dataclass(frozen=True)
class TermExample:
    id: str
    source: str  # canard | mtrag
    split: str
    history: tuple[str, ...]
    question: tuple[str, ...]
    labels: tuple[int, ...]  # one per history word
    gold: frozenset[str]  # the stemmed content words the rewrite adds to the question
    rewrite: str
    asked: str


def example(r: Rewrite, source: str, turns: int = TURNS) -> TermExample | None:
    """One example, or None for a question with nothing before it."""
    prior = prior_turns(r)[-turns:]
    history = history_words(prior)
    if not history:
        return None
    question = question_words(r.question)
    gold = frozenset(content_terms(r.rewrite)) - frozenset(content_terms(r.question))
    asked = asked_terms(question)
    labels = tuple(int(candidate(w, asked) and bool(terms_of(w) & gold)) for w in history)
    return TermExample(r.id, source, r.split, tuple(history), tuple(question), labels, gold, r.rewrite, r.question)


def build(turns: int = TURNS, shifted_every: int = 0) -> list[TermExample]:
    """Every follow-up's example; with `shifted_every` N, also every Nth training question after
    the earlier turns of another conversation, every word 0: a question that changes the topic
    needs no word of the turns before it (a person's rewrite of it adds none)."""
    out: list[TermExample] = []
    for source, items in (("canard", load_canard()), ("mtrag", load_mtrag_rewrites())):
        out += [e for r in items if (e := example(r, source, turns)) is not None]
    if shifted_every > 0:
        train = [e for e in out if e.split == "train"]
        for i in range(0, len(train), shifted_every):
            e, other = train[i], train[(i + len(train) // 2) % len(train)]
            if other.id.split("#")[0] == e.id.split("#")[0]:
                continue
            out.append(TermExample(f"{e.id}~{other.id}", e.source, "train", other.history, e.question,
                                   (0,) * len(other.history), frozenset(), e.asked, e.asked))
    return out
