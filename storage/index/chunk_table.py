"""The chunk table of an index folder: its schema, the handles this process reads it through,
the version it reads (a commit by another process checked out first), and what an ingest reads
of it (the documents it holds, their stored vectors).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from storage.index.chunk_card import CARD, FIELDS, add_cards, unpack
from storage.index.lance_tables import open_table_or_none, vectors_of
from storage.index.scope_column import FIELD as SCOPES_FIELD
from storage.index.scope_column import add_scope_column
from storage.index.scope_tables import doc_list
from storage.index.search_legs import AsyncTableAt
from storage.index.suggestion_index import SuggestionRow, heading_leaf

TABLE = "chunks"


def schema(dim: int) -> pa.Schema:
    """The chunk table: what searches and ingests filter on as columns, what a hit shows in its
    card (storage/index/chunk_card.py). A table migrated from the old layout has the same columns."""
    return pa.schema(
        [
            pa.field("chunk_id", pa.string()),
            pa.field("doc_id", pa.string()),
            pa.field("source", pa.string()),
            pa.field("kind", pa.string()),
            pa.field("position", pa.int32()),
            pa.field("text_norm", pa.string()),
            pa.field("doc_hash", pa.string()),
            pa.field("ingested_at", pa.string()),
            pa.field("vector", pa.list_(pa.float32(), dim)),
            pa.field(CARD, pa.string()),
            SCOPES_FIELD,  # the knowledge scopes of the chunk's document (storage/index/scope_column.py)
        ]
    )


def is_remote(uri: str | Path) -> bool:
    """True for an object-store URI (s3://, gs://, az://, ...), False for a local directory."""
    return "://" in str(uri) and not str(uri).startswith("file://")


class ChunkTable:
    """The `chunks` table in the index's LanceDB database: the synchronous handle (reads,
    writes, maintenance) and the async one the search legs read (storage/index/search_legs.py)."""

    def __init__(self, db: Any, uri: str, path: Path, remote: bool,
                 storage_options: dict[str, str] | None = None) -> None:
        self.db, self.uri, self.path, self.remote = db, uri, path, remote
        self._chunks: Any = None
        self.legs = AsyncTableAt(uri, TABLE, storage_options)  # the legs' view of it
        self._seen_stamp: int | None = None
        self._version: int | None = None  # the table's version, cached while the stamp holds
        self.shown = [CARD]  # the columns a hit is read from: the card, or a table's old columns
        self.written = 0  # rows written since the last index maintenance

    def table(self) -> Any:
        """The chunks table, or None before the first ingest."""
        if self._chunks is None:
            self._chunks = open_table_or_none(self.db, TABLE)
            if self._chunks is not None:
                self._read_shown(add_cards(self._chunks))
                add_scope_column(self._chunks)
        return self._chunks

    def create(self, data: pa.Table, table_schema: pa.Schema) -> None:
        """The first write: the table made with `data`; the legs open it anew."""
        self._chunks = self.db.create_table(TABLE, data=data, schema=table_schema)
        self.legs.forget()

    def _read_shown(self, has_card: bool) -> None:
        self.shown = [CARD] if has_card else list(FIELDS)

    def version(self) -> str:
        """The table version this process reads; a newer one committed by another process is
        checked out first. Locally that check is one stat of the versions folder (a new version
        adds a file there) and the version number is cached between commits; on object storage
        it asks the store, as before."""
        tbl = self.table()
        if tbl is None:
            return "empty"
        stamp = self._versions_stamp()
        if stamp is None or stamp != self._seen_stamp or self._version is None:
            with contextlib.suppress(Exception):  # see writes made by other processes
                tbl.checkout_latest()
            self._seen_stamp = stamp
            self._version = int(tbl.version)
            if self.shown != [CARD]:  # another process may have given the table its cards
                self._read_shown(CARD in tbl.schema.names)
        return str(self._version)

    @property
    def seen(self) -> int:
        """The version `version()` read last (0 before it did, or since this process wrote)."""
        return int(self._version or 0)

    def changed(self) -> None:
        """This process committed to the table (or rebuilt an index): its version is read anew."""
        self._version = None

    def _versions_stamp(self) -> int | None:
        if self.remote:  # no folder to stat on object storage: ask the store every time
            return None
        try:
            stamp = os.stat(self.path / f"{TABLE}.lance" / "_versions").st_mtime_ns
        except OSError:
            return None
        # a folder's mtime ticks coarsely: two commits within one tick look alike, so a stamp
        # younger than a tick's worth is not trusted and the store is asked
        return None if time.time_ns() - stamp < 200_000_000 else stamp

    def count(self) -> int:
        return 0 if (tbl := self.table()) is None else int(tbl.count_rows("kind != 'key'"))  # not the keys

    # -- reading ----------------------------------------------------------------
    def existing_docs(self) -> dict[str, tuple[str, str]]:
        """doc_id -> (source path, content hash) of what the index holds now."""
        tbl = self.table()
        if tbl is None:
            return {}
        rows = tbl.search().select(["doc_id", "source", "doc_hash"]).limit(None).to_arrow()
        docs = rows.group_by(["doc_id", "source", "doc_hash"]).aggregate([]).to_pylist()  # one row per document
        return {r["doc_id"]: (r["source"], r["doc_hash"]) for r in docs}

    def stored_vectors(self, doc_ids: Sequence[str]) -> dict[str, np.ndarray]:
        """chunk_id -> stored vector of the given documents' chunks (an update re-embeds only
        the chunks whose text changed)."""
        tbl = self.table()
        if tbl is None or not doc_ids:
            return {}
        result = tbl.search().where(f"doc_id IN ({doc_list(doc_ids)})").select(["chunk_id", "vector"]).limit(None).to_arrow()
        return dict(zip(result.column("chunk_id").to_pylist(), vectors_of(result), strict=True))

    def suggestion_sources(self) -> tuple[list[SuggestionRow], list[tuple[str, str]]]:
        """FAQ questions (with vectors) and (doc_id, heading) pairs of the whole chunk table: the
        one-time filling of the suggestion table for an index written before it existed."""
        tbl = self.table()
        if tbl is None:
            return [], []
        faq = tbl.search().where("kind = 'faq'").select([*self.shown, "vector"]).limit(None).to_arrow()
        rows = [SuggestionRow(r["doc_id"], "faq", r["faq_question"], v)
                for r, v in zip(self.hit_rows(faq), vectors_of(faq), strict=True)]
        docs = self.hit_rows(tbl.search().where("kind = 'doc'").select(self.shown).limit(None).to_arrow())
        pairs = {(r["doc_id"], heading_leaf(r["heading"])) for r in docs if r["heading"]}
        return rows, sorted((d, h) for d, h in pairs if h)

    def hit_rows(self, result: pa.Table) -> list[dict[str, Any]]:
        """A query's rows as dicts of the shown fields (unpacked from their cards) plus a search
        leg's own columns (`_distance`, `_score`)."""
        if CARD not in result.column_names:
            return result.drop_columns([c for c in ("vector",) if c in result.column_names]).to_pylist()
        cards = result.column(CARD).to_pylist()
        extra = {c: result.column(c).to_pylist() for c in ("_distance", "_score") if c in result.column_names}
        return [unpack(card) | {c: v[i] for c, v in extra.items()} for i, card in enumerate(cards)]
