"""Suggestions offered with a refusal come from a small LanceDB table of their own.

Why: reading every chunk's vector into Python to find the nearest FAQ questions and headings
costs time and memory that grow with the chunk table, all of it paid by the first refusal after
an ingest. The `suggestions` table holds one row per FAQ question and per section heading (leaf)
of each document, with its vector, written by the same ingest that writes the chunks; a refusal
asks it for the nearest few rows, so its cost does not depend on the chunk table's size or on a recent ingest.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from storage.documents import Chunk
from storage.index.lance_tables import open_table_or_none, vectors_of
from storage.index.scope_column import FIELD as SCOPES_FIELD
from storage.index.scope_column import SCOPES, add_scope_column

TABLE = "suggestions"
VERDICTS = "suggestion_verdicts"


@dataclass(frozen=True)
class SuggestionRow:
    doc_id: str
    kind: str  # "faq" (an FAQ question) or "heading" (a section heading's last part)
    text: str
    vector: np.ndarray

    @property
    def key(self) -> str:
        return hashlib.sha1(f"{self.doc_id}\x00{self.kind}\x00{self.text}".encode()).hexdigest()[:20]


def suggestion_schema(dim: int) -> pa.Schema:
    return pa.schema([
        pa.field("key", pa.string()), pa.field("doc_id", pa.string()), pa.field("kind", pa.string()),
        pa.field("text", pa.string()), pa.field("vector", pa.list_(pa.float32(), dim)), SCOPES_FIELD,
    ])


def heading_leaf(heading: str) -> str:
    """The part of a heading path a user would ask about ('' when it is not worth offering)."""
    leaf = heading.split(" > ")[-1].strip()
    return leaf if len(leaf) > 3 and not leaf.startswith("page ") else ""


def faq_and_headings(chunks: Sequence[Chunk], vectors: np.ndarray) -> tuple[list[SuggestionRow], list[tuple[str, str]]]:
    """FAQ questions with their stored vectors, and the (doc_id, heading) pairs still to embed."""
    faqs: list[SuggestionRow] = []
    headings: list[tuple[str, str]] = []
    seen: set[tuple[str, str]] = set()
    for i, c in enumerate(chunks):
        if c.kind == "faq" and (c.doc_id, c.faq_question) not in seen:
            seen.add((c.doc_id, c.faq_question))
            faqs.append(SuggestionRow(c.doc_id, "faq", c.faq_question, vectors[i]))
        elif c.kind == "doc" and c.heading:
            leaf = heading_leaf(c.heading)
            if leaf and (c.doc_id, leaf) not in seen:
                seen.add((c.doc_id, leaf))
                headings.append((c.doc_id, leaf))
    return faqs, headings


class SuggestionTable:
    """The `suggestions` table in the index's LanceDB database."""

    def __init__(self, db: Any, dim: int) -> None:
        self.db = db
        self.dim = dim
        self._rows: Any = None
        self.written = 0  # rows written since the last index maintenance
        self.verdicts = SuggestionVerdicts(db)  # whether each would be answered (storage/index/suggestion_lookup.py)

    def table(self) -> Any:
        if self._rows is None:
            self._rows = open_table_or_none(self.db, TABLE)
            if self._rows is not None:
                add_scope_column(self._rows)
        return self._rows

    def texts(self, limit: int, where: str = "") -> list[str]:
        """Up to `limit` suggestion texts (of one scope: `where`), in table order."""
        tbl = self.table()
        if tbl is None:
            return []
        query = tbl.search().where(where) if where else tbl.search()
        return [str(r["text"]) for r in query.select(["text"]).limit(limit).to_list()]

    def write(self, rows: Sequence[SuggestionRow], replace_docs: Sequence[str],
              doc_scopes: Mapping[str, Sequence[str]] | None = None) -> None:
        """Insert `rows` (each with its document's scopes) and drop every other row of
        `replace_docs`, in one commit."""
        scopes = doc_scopes or {}
        data = pa.Table.from_pylist(
            [{"key": r.key, "doc_id": r.doc_id, "kind": r.kind, "text": r.text,
              "vector": np.asarray(r.vector, dtype=np.float32), SCOPES: list(scopes.get(r.doc_id, ()))}
             for r in rows],
            schema=suggestion_schema(self.dim),
        )
        tbl = self.table()
        if tbl is None:
            self._rows = self.db.create_table(TABLE, data=data, schema=suggestion_schema(self.dim))
            self.written += len(rows)
            return
        scope = ", ".join("'" + d.replace("'", "''") + "'" for d in sorted(set(replace_docs)))
        if not rows and not scope:
            return
        builder = tbl.merge_insert("key").when_matched_update_all().when_not_matched_insert_all()
        if scope:
            builder = builder.when_not_matched_by_source_delete(f"doc_id IN ({scope})")
        builder.execute(data)

    def nearest(self, query_vector: np.ndarray, limit: int, nprobes: int = 0, refine_factor: int = 0,
                ef: int = 0, where: str = "") -> list[tuple[str, np.ndarray]]:
        """The `limit` rows nearest the question (of one scope: `where`, a prefilter), as (text,
        vector); the table stays on disk."""
        tbl = self.table()
        if tbl is None or limit <= 0:
            return []
        q = tbl.search(np.asarray(query_vector, dtype=np.float32), vector_column_name="vector").distance_type("cosine")
        if nprobes:
            q = q.nprobes(nprobes).refine_factor(refine_factor or 1)
            if ef:
                q = q.ef(ef)
        if where:
            q = q.where(where, prefilter=True)
        result = q.limit(limit).select(["text", "vector", "_distance"]).to_arrow()
        texts = result.column("text").to_pylist()
        vecs = vectors_of(result)
        return list(zip(texts, vecs, strict=True))


class SuggestionVerdicts:
    """Whether each suggestion would be answered, decided once for an index version and a
    configuration and kept beside the index (the `suggestion_verdicts` table, replaced whole),
    so every worker reading the index reads the same verdicts instead of deciding them again."""

    def __init__(self, db: Any) -> None:
        self.db = db

    def read(self, decided_at: str) -> dict[str, bool]:
        tbl = open_table_or_none(self.db, VERDICTS)
        if tbl is None:
            return {}
        rows = tbl.search().where(f"decided_at = '{decided_at.replace(chr(39), chr(39) * 2)}'").select(
            ["text", "answered"]).limit(None).to_arrow()
        return dict(zip(rows.column("text").to_pylist(), rows.column("answered").to_pylist(), strict=True))

    def write(self, decided_at: str, verdicts: dict[str, bool]) -> None:
        """Replace the stored verdicts with these; the verdicts of the other knowledge scopes
        decided at the same index version and configuration (the same text before '#') stay."""
        data = pa.table({"decided_at": pa.array([decided_at] * len(verdicts), pa.string()),
                         "text": pa.array(list(verdicts), pa.string()),
                         "answered": pa.array(list(verdicts.values()), pa.bool_())})
        tbl = open_table_or_none(self.db, VERDICTS)  # overwriting nothing makes LanceDB warn
        if tbl is not None and "#" in decided_at:
            base = decided_at.split("#", 1)[0].replace("'", "''")
            kept = tbl.search().where(f"starts_with(decided_at, '{base}#') AND decided_at != "
                                      f"'{decided_at.replace(chr(39), chr(39) * 2)}'").limit(None).to_arrow()
            data = pa.concat_tables([kept.select(data.column_names).cast(data.schema), data])
        self.db.create_table(VERDICTS, data=data, mode="overwrite" if tbl is not None else "create")

