"""Incremental ingestion: load, hash, chunk, embed what changed, commit once."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from core.text.normalize import normalize_text
from storage.documents import Chunk, Document
from storage.index.chunk_index import LanceChunkIndex
from storage.index.suggestion_index import SuggestionRow, faq_and_headings
from storage.ingestion.chunker import chunk_document
from storage.ingestion.loaders import LoadError, discover, load_file
from storage.settings import ChunkSettings

log = logging.getLogger(__name__)
Progress = Callable[[str, int, int], None]  # (phase, done, total)


KEYED_EMBEDDERS = frozenset({"minilm"})


@dataclass
class IngestSummary:
    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    chunks_written: int = 0
    keys_written: int = 0  # heading keys written beside the chunks (storage/ingestion/chunker.py, with_keys)
    seconds: float = 0.0
    embed_seconds: float = 0.0
    vectors_reused: int = 0  # chunks of changed documents whose text (and so vector) did not change
    index_maintenance: dict[str, str] = field(default_factory=dict)
    index_version: str = ""

    def line(self) -> str:
        """One-line summary, as shown in chat and on the console."""
        text = (
            f"added {len(self.added)}, updated {len(self.updated)}, removed {len(self.removed)}, "
            f"unchanged {len(self.unchanged)} documents; {self.chunks_written} chunks written "
            f"in {self.seconds:.1f}s"
        )
        if self.skipped:
            text += f"; skipped {len(self.skipped)} file(s): " + ", ".join(f"{p} ({why})" for p, why in self.skipped[:5])
        return text

    def to_dict(self) -> dict[str, Any]:
        return {
            "added": self.added, "updated": self.updated, "removed": self.removed, "unchanged": self.unchanged,
            "skipped": [{"path": p, "reason": r} for p, r in self.skipped], "chunks_written": self.chunks_written,
            "keys_written": self.keys_written,
            "seconds": round(self.seconds, 3), "index_version": self.index_version,
            "vectors_reused": self.vectors_reused, "index_maintenance": self.index_maintenance,
        }


def _under(source: str, root: Path) -> bool:
    root_s = str(root)
    return source == root_s or source.startswith(root_s.rstrip(os.sep) + os.sep)


def load_documents(paths: Sequence[Path], summary: IngestSummary,
                   only: Sequence[Path] | None = None) -> list[Document]:
    """The documents under `paths` (of them, only the files under `only`, when given)."""
    docs: list[Document] = []
    seen: set[str] = set()
    for root in paths:
        if not root.exists():
            summary.skipped.append((str(root), "does not exist"))
            continue
        for path, doc_id in discover(root):
            if doc_id in seen or (only is not None and not any(_under(str(path), o) for o in only)):
                continue
            seen.add(doc_id)
            try:
                doc = load_file(path, doc_id)
            except (LoadError, OSError) as exc:
                summary.skipped.append((doc_id, str(exc)))
                continue
            if not doc.sections and not doc.faqs:
                summary.skipped.append((doc_id, "no text"))
                continue
            docs.append(doc)
    return docs


def ingest(
    paths: Sequence[Path],
    index: LanceChunkIndex,
    embedder: Any,
    settings: ChunkSettings = ChunkSettings(),
    progress: Progress | None = None,
    scopes_of: Callable[[str], Sequence[str]] | None = None,
    only: Sequence[Path] | None = None,
) -> IngestSummary:
    """Bring the index in line with the files under `paths` (only those roots are touched).
    `scopes_of` gives each document's knowledge scopes from its file's path (bot/scopes.py);
    they are part of its stored hash, so a document whose scopes changed is written again
    (with its stored vectors) even when its text did not change. `only` narrows the ingest to
    the files under those paths (a knowledge scope's folders) while their documents keep the
    ids they have under `paths`; only documents under them are removed."""
    t0 = time.perf_counter()
    summary = IngestSummary()
    roots = [Path(p).resolve() for p in paths]
    narrowed = [Path(p).resolve() for p in only] if only is not None else None
    docs = load_documents(roots, summary, narrowed)
    within = roots if narrowed is None else narrowed
    return update_index(docs, index, embedder, settings, progress, scopes_of,
                        owned=lambda source: any(_under(source, r) for r in within), summary=summary, started=t0)


def update_index(
    docs: Sequence[Document],
    index: LanceChunkIndex,
    embedder: Any,
    settings: ChunkSettings = ChunkSettings(),
    progress: Progress | None = None,
    scopes_of: Callable[[str], Sequence[str]] | None = None,
    *,
    owned: Callable[[str], bool],
    kept: Collection[str] = (),
    summary: IngestSummary | None = None,
    started: float | None = None,
) -> IngestSummary:
    """Bring the index in line with `docs`: the stored documents whose source `owned` claims
    and that are neither in `docs` nor `kept` (known unchanged without being read again, as a
    page that answered 304) are removed, in the same commit that writes the changed ones, so
    no search ever sees half a sync. Files and synced sources both come through here."""
    t0 = time.perf_counter() if started is None else started
    summary = summary or IngestSummary()
    existing = index.existing_docs()
    changed, hashes, doc_scopes = compare(docs, existing, scopes_of, summary)
    present = {d.doc_id for d in docs} | set(kept)
    summary.unchanged.extend(sorted(k for k in kept if k in existing))
    summary.removed = sorted(
        doc_id for doc_id, (source, _) in existing.items() if doc_id not in present and owned(source)
    )
    chunks: list[Chunk] = []
    keys = settings.heading_keys if settings.heading_keys is not None else embedder.name in KEYED_EMBEDDERS
    for doc in changed:
        chunks.extend(chunk_document(doc, settings.chunk_chars, settings.overlap_chars, settings.min_chunk_chars, keys))
    backfill = index.table() is not None and index.suggestions.table() is None
    if chunks or summary.removed or backfill:
        stored = index.chunks.stored_vectors(summary.updated)
        vectors = embed_chunks(chunks, embedder, settings.embed_batch, progress, summary, stored)
        rows = suggestion_rows(chunks, vectors, embedder, index.chunks.suggestion_sources() if backfill else None)
        replace = [*summary.updated, *summary.removed, *summary.added]
        index.writer.apply(chunks, vectors, hashes, replace, rows, doc_scopes)
        summary.index_maintenance = index.upkeep.maintain()
    summary.keys_written = sum(c.kind == "key" for c in chunks)
    summary.chunks_written = len(chunks) - summary.keys_written
    summary.index_version = index.version()
    summary.seconds = time.perf_counter() - t0
    return summary


def compare(docs: Sequence[Document], existing: dict[str, tuple[str, str]],
            scopes_of: Callable[[str], Sequence[str]] | None,
            summary: IngestSummary) -> tuple[list[Document], dict[str, str], dict[str, list[str]]]:
    """The documents to write (added or changed), each document's stored hash (its content, and
    its knowledge scopes when it has any) and its scopes; counted in `summary`."""
    changed: list[Document] = []
    hashes: dict[str, str] = {}
    doc_scopes: dict[str, list[str]] = {}
    for doc in docs:
        h = doc.content_hash()
        doc_scopes[doc.doc_id] = sorted(scopes_of(doc.source)) if scopes_of else []
        if doc_scopes[doc.doc_id]:
            h += "|" + ",".join(doc_scopes[doc.doc_id])
        hashes[doc.doc_id] = h
        old = existing.get(doc.doc_id)
        if old is None:
            summary.added.append(doc.doc_id)
            changed.append(doc)
        elif old[1] != h:
            summary.updated.append(doc.doc_id)
            changed.append(doc)
        else:
            summary.unchanged.append(doc.doc_id)
    return changed, hashes, doc_scopes


def embed_chunks(chunks: Sequence[Chunk], embedder: Any, batch: int, progress: Progress | None,
                 summary: IngestSummary, stored: dict[str, np.ndarray] | None = None) -> np.ndarray:
    """Embed in batches (sorted by length, which pads less), reporting progress. A chunk whose
    id (a hash of its document, position and text) is already stored keeps its vector."""
    out = np.zeros((len(chunks), embedder.dim), dtype=np.float32)
    todo: list[int] = []
    for i, c in enumerate(chunks):
        vec = (stored or {}).get(c.chunk_id)
        if vec is None:
            todo.append(i)
        else:
            out[i] = vec
    summary.vectors_reused = len(chunks) - len(todo)
    texts = {i: normalize_text(chunks[i].embed_text()) for i in todo}
    keys = [i for i in todo if chunks[i].kind == "key"]  # headings are embedded as the questions they are
    order = sorted((i for i in todo if chunks[i].kind != "key"), key=lambda i: len(texts[i]))
    t0 = time.perf_counter()
    for start in range(0, len(order), batch):
        idx = order[start : start + batch]
        out[idx] = embedder.embed_passages([texts[i] for i in idx])
        if progress:
            progress("embedding", min(start + batch, len(order)), len(order))
    distinct = sorted({texts[i] for i in keys})
    if distinct:
        by_text = dict(zip(distinct, embedder.embed_queries(distinct), strict=True))
        for i in keys:
            out[i] = by_text[texts[i]]
    summary.embed_seconds = time.perf_counter() - t0
    return out


def suggestion_rows(chunks: Sequence[Chunk], vectors: np.ndarray, embedder: Any,
                    earlier: tuple[list[SuggestionRow], list[tuple[str, str]]] | None = None) -> list[SuggestionRow]:
    """The suggestion table's rows for the written documents: FAQ questions keep their chunk
    vectors, headings are embedded as questions (once per distinct text). `earlier` adds the
    rows of an index written before the suggestion table existed."""
    faqs, headings = faq_and_headings(chunks, vectors)
    if earlier is not None:
        faqs.extend(earlier[0])
        headings.extend(earlier[1])
    distinct = sorted({h for _, h in headings})
    vecs = embedder.embed_queries([normalize_text(h) for h in distinct]) if distinct else []
    by_text = dict(zip(distinct, vecs, strict=True))
    return [*faqs, *(SuggestionRow(doc_id, "heading", h, by_text[h]) for doc_id, h in headings)]
