"""A table per knowledge scope: a scoped search walks its scope's own graph, with no row mask.

Why: a search prefiltered to a scope inside the one chunk table pays for the filter's row mask
inside the graph walk and the full-text search, whatever the candidate list, so a scoped search
cost several times an unscoped one at scale (bench/README.md, "Scale"). LanceDB has no index
partitioned by a label, so each scope gets a table of its own (`chunks_in_<scope>`): a copy of
the chunk table's rows of that scope, with its own ANN and full-text indexes. A document in
several scopes is stored once in the chunk table and once in each of its scopes' tables.

The chunk table stays the record (ingest, stats, unscoped search read it); the scope tables are
derived from it: an ingest writes the same rows to them after its own commit, and index
maintenance checks each scope table's row count against the chunk table's rows of that scope
and copies the scope again when they differ (a crash between the two commits, an index
written before scope tables existed, a scope removed from config). Until a scope's table is
there, its searches use the prefilter on the chunk table, as before.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from functools import partial
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from storage.index.ann import SearchIndexSettings, maintain_table
from storage.index.lance_tables import open_table_or_none, text_index
from storage.index.scope_column import SCOPES, scope_filter
from storage.index.search_legs import AsyncTableAt

log = logging.getLogger(__name__)
PREFIX = "chunks_in_"  # scope names are [A-Za-z0-9_.-]{1,64} (bot/scopes.py), valid in table names


def table_name(scope: str) -> str:
    return PREFIX + scope


def doc_list(doc_ids: Iterable[str]) -> str:
    """A SQL list of document ids, quoted."""
    return ", ".join("'" + d.replace("'", "''") + "'" for d in sorted(set(doc_ids)))


class ScopeTables:
    """The scope tables of one index folder: written with the chunk table, kept in step by
    maintenance, read by scoped searches."""

    def __init__(self, db: Any, uri: str, dim: int, settings: SearchIndexSettings,
                 storage_options: dict[str, str] | None = None) -> None:
        self.db, self.uri, self.dim, self.settings = db, uri, dim, settings
        self.storage_options = storage_options
        self._tables: dict[str, Any] = {}
        self._legs: dict[str, AsyncTableAt] = {}
        self._seen: dict[str, int] = {}  # scope -> the chunk table version its handles were brought to
        self._absent: dict[str, int] = {}  # scope -> the chunk table version at which it had no table
        self.written: dict[str, int] = {}  # scope -> rows written since the last maintenance

    def names(self) -> list[str]:
        """The scopes that have a table now."""
        names: list[str] = []
        token = None
        while True:
            page = self.db.list_tables(page_token=token)
            names += [n[len(PREFIX):] for n in page.tables if n.startswith(PREFIX)]
            token = page.page_token
            if not token:
                return sorted(names)

    def table(self, scope: str) -> Any:
        if scope not in self._tables:
            tbl = open_table_or_none(self.db, table_name(scope))
            if tbl is None:
                return None
            self._tables[scope] = tbl
        return self._tables[scope]

    # -- reading ----------------------------------------------------------------
    def for_search(self, scope: str, version: int) -> tuple[Any, AsyncTableAt] | None:
        """(synchronous handle, the legs' handle) of a scope's table brought to the chunk table's
        `version` (an ingest writes the chunk table first, then the scope tables, and the
        maintenance after it commits the chunk table last, so a newer chunk table version is
        when to look for newer scope table versions); None when the scope has no table."""
        if self._absent.get(scope) == version:  # looked for at this version already: not opened per search
            return None
        tbl = self.table(scope)
        if tbl is None:
            self._absent[scope] = version
            return None
        legs = self._legs.get(scope)
        if legs is None:
            legs = self._legs[scope] = AsyncTableAt(self.uri, table_name(scope), self.storage_options)
        if self._seen.get(scope) != version:
            try:  # see writes made by other processes
                tbl.checkout_latest()
            except Exception:  # noqa: BLE001 - dropped by another process: the chunk table's prefilter answers
                self.forget(scope)
                return None
            self._seen[scope] = version
        return tbl, legs

    # -- writing ----------------------------------------------------------------
    def write(self, data: pa.Table, replace_docs: Sequence[str], old_scopes: Iterable[str]) -> None:
        """After the chunk table's commit: each scope's rows of `data` merged into its table, and
        the rows of `replace_docs` it no longer has removed (`old_scopes`: the scopes those
        documents were in before)."""
        new_scopes = set(pc.unique(pc.list_flatten(data.column(SCOPES))).to_pylist()) if data.num_rows else set()
        for scope in sorted(new_scopes | set(old_scopes)):
            self._merge(scope, data.filter(_has_scope(data, scope)), replace_docs)

    def _merge(self, scope: str, rows: pa.Table, replace_docs: Sequence[str]) -> None:
        tbl = self.table(scope)
        if tbl is None:
            if rows.num_rows:
                self._tables[scope] = self.db.create_table(table_name(scope), data=rows, schema=rows.schema)
                self.written[scope] = self.written.get(scope, 0) + rows.num_rows
            return
        gone = doc_list(replace_docs)
        if rows.num_rows:
            builder = tbl.merge_insert("chunk_id").when_matched_update_all().when_not_matched_insert_all()
            if gone:
                builder = builder.when_not_matched_by_source_delete(f"doc_id IN ({gone})")
            builder.execute(rows)
        elif gone:
            tbl.delete(f"doc_id IN ({gone})")
        self.written[scope] = self.written.get(scope, 0) + rows.num_rows

    # -- keeping them in step ---------------------------------------------------
    def sync(self, chunks: Any) -> dict[str, str]:
        """Every scope named in the chunk table gets a table holding exactly its rows (copied
        again when the row counts differ), a table whose scope no chunk names any more is
        dropped; then each table's indexes are brought up to date. Says what was done, per scope."""
        wanted = scopes_in(chunks)
        done: dict[str, str] = {}
        for scope in sorted(set(self.names()) - wanted):
            self.db.drop_table(table_name(scope))
            self.forget(scope)
            done[scope] = "dropped (no chunk is in this scope)"
        for scope in sorted(wanted):
            tbl = self.table(scope)
            if tbl is None or tbl.count_rows() != chunks.count_rows(scope_filter(scope)):
                self._copy(chunks, scope)
            tbl = self.table(scope)
            written = self.written.pop(scope, 0)
            done[scope] = maintain_table(tbl, written, self.dim, self.settings, partial(text_index, tbl))
        return done

    def _copy(self, chunks: Any, scope: str) -> None:
        """The scope's table made anew from the chunk table's rows of that scope."""
        rows = chunks.search().where(scope_filter(scope)).limit(None).to_arrow()
        self.forget(scope)
        self._tables[scope] = self.db.create_table(table_name(scope), data=rows, schema=chunks.schema, mode="overwrite")
        self.written[scope] = rows.num_rows + self.written.get(scope, 0)
        log.info("scope table %s: %d rows copied from the chunk table", table_name(scope), rows.num_rows)

    def forget(self, scope: str) -> None:
        """Drop a scope's handles (its table was made anew, dropped, or could not be read): the
        next search opens it again if it is there."""
        self._tables.pop(scope, None)
        self._seen.pop(scope, None)
        self._absent.pop(scope, None)
        if (legs := self._legs.pop(scope, None)) is not None:
            legs.forget()


def _has_scope(data: pa.Table, scope: str) -> pa.Array:
    """Which rows of `data` are in `scope`."""
    flat = pc.list_flatten(data.column(SCOPES))
    parents = pc.list_parent_indices(data.column(SCOPES))
    mask = np.zeros(data.num_rows, dtype=bool)
    mask[pc.filter(parents, pc.equal(flat, scope)).to_numpy()] = True
    return pa.array(mask)


def scopes_of_docs(chunks: Any, doc_ids: Sequence[str]) -> set[str]:
    """The scopes the given documents' chunks are in now (their scope tables lose the rows a
    re-ingest drops)."""
    if chunks is None or not doc_ids:
        return set()
    got = chunks.search().where(f"doc_id IN ({doc_list(doc_ids)})").select([SCOPES]).limit(None).to_arrow()
    return {s for row in got.column(SCOPES).to_pylist() for s in (row or ())}


def scopes_in(chunks: Any) -> set[str]:
    """Every scope some chunk of the table is in."""
    col = chunks.search().select([SCOPES]).limit(None).to_arrow().column(SCOPES)
    return {s for s in pc.unique(pc.list_flatten(col)).to_pylist() if s}


