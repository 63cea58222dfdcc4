"""Index upkeep after a write: the full-text index built once and then extended, each ANN index
(chunks, suggestions, every scope table) trained when its table is large enough and retrained
only past a share of rows written since (the rules are storage/index/ann.py's), the scope tables
brought in step with the chunk table; then every table read once so the first question does not
pay for opening the index files.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np

from storage.index.ann import AnnPlan, SearchIndexSettings, ann_state, maintain_table
from storage.index.chunk_search import ChunkSearch
from storage.index.chunk_table import ChunkTable
from storage.index.lance_tables import text_index
from storage.index.scope_column import index_scopes
from storage.index.scope_tables import ScopeTables
from storage.index.suggestion_index import SuggestionTable
from storage.index.suggestion_lookup import SuggestionLookup

log = logging.getLogger(__name__)


class IndexUpkeep:
    """The indexes of one index folder's tables, kept up to date and warm."""

    def __init__(self, chunks: ChunkTable, suggestions: SuggestionTable, scope_tables: ScopeTables,
                 settings: SearchIndexSettings, dim: int, searcher: ChunkSearch, lookup: SuggestionLookup) -> None:
        self.chunks = chunks
        self.suggestions = suggestions
        self.scope_tables = scope_tables
        self.settings = settings
        self.dim = dim
        self.searcher = searcher  # warm() searches through them
        self.lookup = lookup

    def ann_state(self, tbl: Any) -> tuple[AnnPlan | None, int]:
        return (None, 0) if tbl is None else ann_state(tbl)

    def maintain(self) -> dict[str, str]:
        """Bring the indexes up to date after a write, without retraining what can be extended:
        the full-text index is built once and then extended; each ANN index (chunks,
        suggestions) is trained when its table reaches `ann_min_rows` and retrained only past
        `retrain_share` of rows written since training. Says what was done, per table."""
        done: dict[str, str] = {}
        self.chunks.changed()
        written, self.chunks.written = self.chunks.written, 0
        suggestions_written, self.suggestions.written = self.suggestions.written, 0
        chunks = self.chunks.table()
        if chunks is not None and chunks.count_rows() > 0:
            index_scopes(chunks)
            if self.settings.scope_tables:  # before the chunk table's own commit: see ScopeTables.for_search
                done |= {f"scope {k}": v for k, v in self.scope_tables.sync(chunks).items()}
            done["chunks"] = maintain_table(chunks, written, self.dim, self.settings, self.rebuild_text_index)
        sugg = self.suggestions.table()
        if sugg is not None and sugg.count_rows() > 0:
            index_scopes(sugg)
            done["suggestions"] = maintain_table(sugg, suggestions_written, self.dim, self.settings)
        self.warm()
        return done

    def warm(self) -> None:
        """Read the tables once (after maintenance: at their new versions; when a front end
        starts: each scope's table too), so the first question does not pay for opening the index
        files (a table's first lookup reads them before it can answer; bench.system.scale)."""
        probe = np.full(self.dim, 1 / np.sqrt(self.dim), dtype=np.float32)
        try:
            self.lookup.candidates(probe, 1)
            for scope in [None, *(self.scope_tables.names() if self.settings.scope_tables else [])]:
                self.searcher.search("warm", probe, 1, scope=scope)
        except Exception as exc:  # noqa: BLE001 - a warm-up that fails leaves the first question to pay
            log.debug("warm-up after index maintenance: %s", exc)

    def rebuild_text_index(self) -> None:
        """(Re)build the full-text index over normalised text (the first time, or on request)."""
        tbl = self.chunks.table()
        if tbl is None or tbl.count_rows() == 0:
            return
        text_index(tbl)
        self.chunks.changed()
