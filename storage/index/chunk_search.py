"""Hybrid search over the chunk table: the vector and full-text legs sent to LanceDB at once
(storage/index/search_legs.py), on a knowledge scope's own table when it has one
(storage/index/scope_tables.py), else on the chunk table with the scope as a prefilter, and
fused by reciprocal rank (storage/index/fusion.py); and the full-text lookup of the words no
chunk mentions.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from core.messages import Hit
from core.text.lexicon import FTS_SKIP
from core.text.normalize import normalize_text
from storage.index.ann import SearchIndexSettings, SearchPlans, ef_for, nprobes_for
from storage.index.chunk_table import ChunkTable
from storage.index.fusion import fuse
from storage.index.lance_tables import vectors_of
from storage.index.scope_column import scope_filter
from storage.index.scope_tables import ScopeTables
from storage.index.search_legs import AsyncTableAt, LegObserver, LegQuery, run_legs, word_queries

log = logging.getLogger(__name__)
_FTS_SAFE = re.compile(r"[^\w\s]", re.UNICODE)


def fts_terms(text: str, skip: frozenset[str] = FTS_SKIP) -> list[str]:
    """The full-text leg's terms: a question's words without the function words found in
    nearly every passage (core.text.lexicon.FTS_SKIP; all of them when nothing else is left). Such a
    word matches most chunks, so scoring its postings was most of the leg's time at a million
    chunks, for no ranking signal."""
    terms = _FTS_SAFE.sub(" ", normalize_text(text)).split()
    return [t for t in terms if t not in skip] or terms


class ChunkSearch:
    """The searches of one index folder's chunk table (and its scope tables)."""

    def __init__(self, chunks: ChunkTable, scope_tables: ScopeTables, plans: SearchPlans,
                 settings: SearchIndexSettings, candidates: int = 20, rrf_k: int = 60) -> None:
        self.chunks = chunks
        self.scope_tables = scope_tables
        self.plans = plans
        self.settings = settings
        self.candidates = candidates
        self.rrf_k = rrf_k
        self.observe_legs: LegObserver | None = None  # told each search's leg times (the benchmarks set one)
        self._scope_rows: dict[str, tuple[int, tuple[int, int]]] = {}  # scope -> (version, (its rows, all rows))

    def search(self, query_text: str, query_vector: np.ndarray, k: int, scope: str | None = None) -> list[Hit]:
        """Vector and full-text results fused by reciprocal rank; scores stay cosine. Both legs go
        to LanceDB at once (storage/index/search_legs.py); the vector leg's cosine is its `_distance`
        (an ANN query re-ranks on stored vectors), only the full-text hits bring their vectors.
        A `scope` is a prefilter of both legs: rows outside it are never ranked or read."""
        tbl = self.chunks.table()
        if tbl is None:
            return []
        qv = np.asarray(query_vector, dtype=np.float32)
        self.chunks.version()  # a stat of the versions folder; checks out a newer version when there is one
        version = self.chunks.seen
        own = self.scope_tables.for_search(scope, version) if scope and self.settings.scope_tables else None
        try:
            vec, fts = self._legs(tbl, own, scope, version, qv, query_text)
        except Exception:
            if own is None or scope is None:
                raise
            log.warning("scope table of %s unreadable (dropped by another process?); searching the chunk table", scope)
            self.scope_tables.forget(scope)
            vec, fts = self._legs(tbl, None, scope, version, qv, query_text)
        vec_rows = self.chunks.hit_rows(vec)
        for row in vec_rows:
            row["sim"] = 1.0 - float(row["_distance"])
        if isinstance(fts, Exception):  # no FTS index yet, or a query the parser rejects
            log.debug("full-text search skipped: %s", fts)
        return fuse(vec_rows, self._fts_rows(fts, qv) if isinstance(fts, pa.Table) else [], k, self.rrf_k)

    def _legs(self, tbl: Any, own: tuple[Any, AsyncTableAt] | None, scope: str | None, version: int,
              qv: np.ndarray, text: str) -> tuple[pa.Table, pa.Table | Exception | None]:
        """Both legs on the scope's own table (`own`: its rows alone, no row mask;
        storage/index/scope_tables.py), else on the chunk table with the scope as a prefilter."""
        if own is not None:
            version = int(own[0].version)
            plan, rows, share, where, legs = self.plans.plan(own[0], version), 0, 1.0, "", own[1]
        else:
            plan, (rows, share), where, legs = (self.plans.plan(tbl, version), self.scope_share(tbl, scope),
                                                scope_filter(scope), self.chunks.legs)
        query = LegQuery(qv, " ".join(fts_terms(text)), self.candidates, self.chunks.shown,
                         nprobes_for(plan, self.settings) if plan else 0, self.settings.refine_factor,
                         ef_for(plan, self.settings, share), where, bool(where) and rows <= self.settings.scope_exact_rows)
        return run_legs(legs, version, query, self.observe_legs)

    def scope_share(self, tbl: Any, scope: str | None) -> tuple[int, float]:
        """A knowledge scope's rows and their share of the table, read once per table version (the
        label-list index counts them): a scope of few rows is searched exactly, its rows alone,
        like a small table; a larger one through the graph with a list sized to its share."""
        if scope is None:
            return 0, 1.0
        version = self.chunks.seen
        held = self._scope_rows.get(scope)
        if held is None or held[0] != version:
            counts = (int(tbl.count_rows(scope_filter(scope))), max(1, int(tbl.count_rows())))
            held = self._scope_rows[scope] = (version, counts)
        rows, total = held[1]
        return rows, rows / total

    def _fts_rows(self, result: pa.Table, qv: np.ndarray) -> list[dict[str, Any]]:
        sims = vectors_of(result) @ qv if result.num_rows else np.zeros(0, dtype=np.float32)
        rows = self.chunks.hit_rows(result)
        for row, sim in zip(rows, sims, strict=True):
            row["sim"] = float(sim)
        return rows

    def unmentioned(self, words: Sequence[str], scope: str | None = None) -> list[str]:
        """The words no chunk of `scope` holds in its title, heading or text, by the full-text
        index's own matching (stemmed, accents folded, one letter apart: `word_queries`): one lookup of
        a row per word. A word it cannot look up (no full-text index yet) counts as mentioned."""
        tbl = self.chunks.table()
        out: list[str] = []
        failed: list[str] = []
        for word in words if tbl is not None else ():
            try:
                queries = (tbl.search(q, query_type="fts").select(["chunk_id", "_score"]).limit(1) for q in word_queries(word))
                if not any((q.where(scope_filter(scope), prefilter=True) if scope else q).to_arrow().num_rows for q in queries):
                    out.append(word)
            except Exception as exc:  # LanceDB raises no one type for a missing full-text index
                failed.append(f"{word!r} ({type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''})")
        if failed:
            log.warning("full-text lookup failed for %s; counted as mentioned", ", ".join(failed))
        return out
