"""An ingest's write to the index: its chunks inserted and the replaced documents' other chunks
dropped in one `merge_insert` commit, so a reader (or a crash) never sees half an ingest
(LanceDB keeps the previous version until the new one commits); then the same rows written to
the knowledge scopes' tables (storage/index/scope_tables.py) and the documents' suggestion rows
to theirs (storage/index/suggestion_index.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pyarrow as pa

from core.text.normalize import normalize_text
from storage.documents import Chunk
from storage.index.ann import SearchIndexSettings
from storage.index.chunk_card import CARD, FIELDS, pack
from storage.index.chunk_table import ChunkTable, schema
from storage.index.index_meta import IndexMeta
from storage.index.scope_column import SCOPES
from storage.index.scope_tables import ScopeTables, doc_list, scopes_of_docs
from storage.index.suggestion_index import SuggestionRow, SuggestionTable


def _searched(c: Chunk) -> tuple[str, ...]:
    """What the full-text leg matches a row by: a chunk's title, heading and text; a heading key's
    title and heading alone (a short field, so a question worded like the heading ranks it high)."""
    return (c.title, c.key) if c.kind == "key" else (c.title, c.heading, c.text)


def _card(c: Chunk) -> dict[str, Any]:
    """The fields a hit shows; a heading key shows the chunk under its heading (kind "key" says
    the hit was found by the heading)."""
    fields = {f: getattr(c, f) for f in FIELDS}
    return fields | {"chunk_id": c.shows} if c.kind == "key" else fields


class ChunkWriter:
    """Writes of one index folder: the chunk table, its scope tables, the suggestion table and
    the embedder recorded beside them (storage/index/index_meta.py)."""

    def __init__(self, chunks: ChunkTable, suggestions: SuggestionTable, scope_tables: ScopeTables, meta: IndexMeta,
                 settings: SearchIndexSettings, dim: int, embedder_name: str) -> None:
        self.chunks = chunks
        self.suggestions = suggestions
        self.scope_tables = scope_tables
        self.meta = meta
        self.settings = settings
        self.dim = dim
        self.embedder_name = embedder_name

    def write_meta(self) -> None:
        self.meta.write(self.embedder_name, self.dim)

    def apply(self, new_chunks: Sequence[Chunk], vectors: np.ndarray, doc_hashes: dict[str, str],
              replace_docs: Sequence[str], suggestions: Sequence[SuggestionRow] = (),
              doc_scopes: Mapping[str, Sequence[str]] | None = None) -> None:
        """Insert `new_chunks` and drop every other chunk of `replace_docs`, in one commit; then
        the same for the documents' suggestion rows (FAQ questions, headings). Every row carries
        the knowledge scopes of its document (`doc_scopes`; none when scopes are not used)."""
        scopes = doc_scopes or {}
        now = datetime.now(UTC).isoformat(timespec="seconds")
        records = [
            {
                "chunk_id": c.chunk_id, "doc_id": c.doc_id, "source": c.source, "kind": c.kind, "position": c.position,
                "text_norm": normalize_text(" ".join(p for p in _searched(c) if p)),
                "doc_hash": doc_hashes[c.doc_id], "ingested_at": now, "vector": vectors[i].astype(np.float32),
                CARD: pack(_card(c)), SCOPES: list(scopes.get(c.doc_id, ())),
            }
            for i, c in enumerate(new_chunks)
        ]
        data = pa.Table.from_pylist(records, schema=schema(self.dim))
        tbl = self.chunks.table()
        scoped = self.settings.scope_tables and (bool(scopes) or bool(self.scope_tables.names()))
        old_scopes = scopes_of_docs(tbl, replace_docs) if scoped else set()  # no read without scopes
        if tbl is None:
            self.chunks.create(data, schema(self.dim))
        else:
            gone = doc_list(replace_docs)
            builder = tbl.merge_insert("chunk_id").when_matched_update_all().when_not_matched_insert_all()
            if gone:
                builder = builder.when_not_matched_by_source_delete(f"doc_id IN ({gone})")
            builder.execute(data)
        if scoped:
            self.scope_tables.write(data, replace_docs, old_scopes)
        self.write_meta()
        self.suggestions.write(suggestions, replace_docs, scopes)
        self.chunks.written += len(new_chunks)
        self.chunks.changed()
