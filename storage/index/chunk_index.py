"""The LanceDB chunk index: the ChunkIndex port (core/ports.py) over the tables of one index
folder, its work done by one part per job:

- `chunks` (storage/index/chunk_table.py): the chunk table, the version this process reads, and
  what an ingest reads of it;
- `searcher` (storage/index/chunk_search.py): hybrid search, and the words no chunk mentions;
- `lookup` (storage/index/suggestion_lookup.py): the suggestions nearest a question and their
  stored verdicts, from the suggestion table (`suggestions`, storage/index/suggestion_index.py);
- `writer` (storage/index/chunk_writer.py): an ingest's write, in one commit;
- `upkeep` (storage/index/upkeep.py): the indexes after a write, and the warm-up.

The knowledge scopes' own tables (`scope_tables`, storage/index/scope_tables.py) and the ANN
plans queries read (`plans`, storage/index/ann.py) are shared by the parts that need them.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import lancedb
import numpy as np

from core.messages import Hit
from storage.index.ann import SearchIndexSettings, SearchPlans
from storage.index.chunk_search import ChunkSearch
from storage.index.chunk_table import ChunkTable, is_remote
from storage.index.chunk_writer import ChunkWriter
from storage.index.index_meta import IndexMeta
from storage.index.scope_tables import ScopeTables
from storage.index.search_legs import LegObserver
from storage.index.suggestion_index import SuggestionTable
from storage.index.suggestion_lookup import SuggestionLookup
from storage.index.upkeep import IndexUpkeep


class LanceChunkIndex:
    """ChunkIndex port over LanceDB tables in a local directory or on object storage.

    `path` may be an `s3://bucket/prefix` URI (or any URI LanceDB's object store takes), with
    `storage_options` (endpoint, region, credentials) handed to LanceDB as they are. Several
    workers then read one index: each question checks out the latest committed version, so a
    re-ingest by any process is seen by every worker on its next question.
    """

    def __init__(self, path: Path | str, dim: int, embedder_name: str, candidates: int = 20, rrf_k: int = 60,
                 search: SearchIndexSettings | None = None, storage_options: dict[str, str] | None = None) -> None:
        self.uri = str(path)
        self.remote = is_remote(path)
        self.path = Path(path) if not self.remote else Path(self.uri.split("://", 1)[1])
        if not self.remote:
            self.path.mkdir(parents=True, exist_ok=True)
        self.dim = dim
        self.embedder_name = embedder_name
        self.db = lancedb.connect(self.uri, storage_options=storage_options or None)
        self.settings = search or SearchIndexSettings()
        self.chunks = ChunkTable(self.db, self.uri, self.path, self.remote, storage_options or None)
        self.suggestions = SuggestionTable(self.db, dim)
        self.scope_tables = ScopeTables(self.db, self.uri, dim, self.settings, storage_options or None)
        self.plans = SearchPlans()
        self.meta = IndexMeta(self.db, self.uri, self.path, self.remote)
        self.searcher = ChunkSearch(self.chunks, self.scope_tables, self.plans, self.settings, candidates, rrf_k)
        self.lookup = SuggestionLookup(self.suggestions, self.plans, self.settings)
        self.writer = ChunkWriter(self.chunks, self.suggestions, self.scope_tables, self.meta, self.settings,
                                  dim, embedder_name)
        self.upkeep = IndexUpkeep(self.chunks, self.suggestions, self.scope_tables, self.settings, dim,
                                  self.searcher, self.lookup)
        self.meta.check(embedder_name, dim)

    # -- what the chunk table holds ----------------------------------------------------
    def table(self) -> Any:
        """The chunks table, or None before the first ingest."""
        return self.chunks.table()

    def count(self) -> int:
        return self.chunks.count()

    def existing_docs(self) -> dict[str, tuple[str, str]]:
        """doc_id -> (source path, content hash) of what the index holds now."""
        return self.chunks.existing_docs()

    def observe_legs(self, observer: LegObserver | None) -> None:
        """Tell `observer` each search's vector and full-text leg times (ms); None stops it. For the
        benchmarks: the product keeps no timing state."""
        self.searcher.observe_legs = observer

    # -- the ChunkIndex port ---------------------------------------------------------------
    def version(self) -> str:
        return self.chunks.version()

    def search(self, query_text: str, query_vector: np.ndarray, k: int, scope: str | None = None) -> list[Hit]:
        return self.searcher.search(query_text, query_vector, k, scope)

    def unmentioned(self, words: Sequence[str], scope: str | None = None) -> list[str]:
        return self.searcher.unmentioned(words, scope)

    def suggestion_candidates(self, query_vector: np.ndarray, limit: int,
                              scope: str | None = None) -> list[tuple[str, np.ndarray]]:
        return self.lookup.candidates(query_vector, limit, scope)

    def suggestion_texts(self, limit: int, scope: str | None = None) -> list[str]:
        return self.lookup.texts(limit, scope)

    def suggestion_verdicts(self, decided_at: str) -> dict[str, bool]:
        return self.lookup.verdicts(decided_at)

    def save_suggestion_verdicts(self, decided_at: str, verdicts: dict[str, bool]) -> None:
        self.lookup.save_verdicts(decided_at, verdicts)
