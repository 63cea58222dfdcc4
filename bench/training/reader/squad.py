"""SQuAD 2.0 (CC BY-SA 4.0): the train file's 10 articles and the dev file's odd-index articles are
trained on (articles 1 and 11 kept for dev); the dev file's even-index articles are the grounding
benchmark's test knowledge base and are the reader's test part, never trained on. An answerable
question's paragraph is positive and the paragraph of the same article sharing most of its words
is a negative; an unanswerable question's own paragraph (written to look answerable) is a negative."""

from __future__ import annotations

from bench.datasets import DATASETS, SQUAD_FILE, SquadArticle, load_squad
from bench.training.reader.common import ReaderPair
from bench.training.sources import overlap

TRAIN_FILE = DATASETS / "squad2" / "train-v2.0-articles-00-09.json"
DEV_ARTICLES = {1, 11}


def _split(article: SquadArticle, from_train_file: bool) -> str:
    if from_train_file:
        return "train"
    if article.index % 2 == 0:
        return "test"
    return "dev" if article.index in DEV_ARTICLES else "train"


def _article_pairs(article: SquadArticle) -> list[ReaderPair]:
    out: list[ReaderPair] = []
    group = f"squad:{article.title}"
    for q in article.questions:
        own = article.paragraphs[q.paragraph]
        if q.is_impossible:
            out.append(ReaderPair(q.question, article.title, "", own, 0, "squad", group, "unanswerable, own paragraph"))
            continue
        out.append(ReaderPair(q.question, article.title, "", own, 1, "squad", group, "own paragraph"))
        others = [(overlap(q.question, p), -i, p) for i, p in enumerate(article.paragraphs) if i != q.paragraph]
        if others:
            out.append(ReaderPair(q.question, article.title, "", max(others)[2], 0, "squad", group, "same article"))
    return out


def build(split: str, limit: int | None = None) -> list[ReaderPair]:
    out: list[ReaderPair] = []
    for path, from_train in ((TRAIN_FILE, True), (SQUAD_FILE, False)):
        if not path.is_file():
            continue
        for article in load_squad(path):
            if _split(article, from_train) == split:
                out += _article_pairs(article)
    return out[:limit] if limit else out
