"""CLAPNQ dev half (Apache-2.0): natural search questions with a Wikipedia passage; the
unanswerable half comes with a same-topic passage that does not answer. Passages are chunked as
groundbot ingests them: the chunk sharing most words with the annotators' answer is positive, the
passage's other chunks are negatives, and every chunk of an unanswerable question's passage is a
negative. Records are split as the grounding benchmark splits them: even index = test (never
trained on); odd index: index % 4 == 1 dev, == 3 train."""

from __future__ import annotations

from bench.datasets import CLAPNQ_DIR, clapnq_files, load_clapnq
from bench.training.reader.common import ReaderPair, chunk_texts
from bench.training.sources import overlap


def _split(index: int) -> str:
    if index % 2 == 0:
        return "test"
    return "dev" if index % 4 == 1 else "train"


def build(split: str, limit: int | None = None) -> list[ReaderPair]:
    out: list[ReaderPair] = []
    for kind, path in clapnq_files(CLAPNQ_DIR).items():
        if not path.is_file():
            continue
        for r in load_clapnq(path, kind):
            if _split(r.index) != split:
                continue
            group = f"clapnq:{kind}:{r.index}"
            chunks = chunk_texts(r.title, r.passage)
            if not r.answer:
                out += [ReaderPair(r.question, r.title, "", c, 0, "clapnq", group, "same-topic, does not answer")
                        for c in chunks[:2]]
                continue
            best = max(range(len(chunks)), key=lambda i: (overlap(r.answer, chunks[i]), -i))
            out.append(ReaderPair(r.question, r.title, "", chunks[best], 1, "clapnq", group, "chunk with the answer"))
            out += [ReaderPair(r.question, r.title, "", c, 0, "clapnq", group, "same article")
                    for i, c in enumerate(chunks) if i != best][:1]
    return out[:limit] if limit else out
