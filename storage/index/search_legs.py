"""The two legs of a hybrid search (vector and full text), sent to LanceDB together.

Why: LanceDB's synchronous API hands every call to its event-loop thread and waits for it,
and a hybrid search asked for the vector leg, then the full-text leg, then the table version,
each a round trip. Here the table is opened through LanceDB's public async API
(`lancedb.connect_async`, `AsyncTable`) on a loop groundbot owns (storage/index/async_loop.py), and
both legs are one coroutine on it: the Rust engine runs them concurrently and the calling
thread crosses to the loop once per search. Each leg's time is handed to an observer when one
is set (`LegObserver`: the benchmarks set one, to say which leg misses its budget); the product
keeps no timing state of its own.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import lancedb
import numpy as np
import pyarrow as pa
from lancedb.query import MatchQuery

from storage.index.async_loop import LANCE_LOOP, AsyncLoop

FUZZY_LETTERS = 7  # a word this long matches one spelt a letter apart ("savannah", "savanna"); a shorter one only itself ("sonar" is not "solar")


def word_queries(word: str, column: str = "text_norm") -> list[Any]:
    """The full-text queries asking whether any row holds `word`, tried in turn: the word as the
    index was built (stemmed, accents folded), then, for a word of FUZZY_LETTERS or more, any
    word one letter apart with the same first letter (the index's fuzzy matching reads the word
    unstemmed): a question's spelling is not the sources' ("savannah" for "savanna"), and a
    misspelt name is still the name."""
    exact: dict[str, Any] = {"fuzziness": 0}
    fuzzy: dict[str, Any] = {"fuzziness": 1, "prefix_length": 1}
    return [MatchQuery(word, column, **opts) for opts in ([exact, fuzzy] if len(word) >= FUZZY_LETTERS else [exact])]


# (vector leg ms, full-text leg ms) of one search, each measured inside the event loop
LegObserver = Callable[[float, float], None]


@dataclass(frozen=True)
class LegQuery:
    vector: np.ndarray
    text: str                 # full-text terms ('' = no full-text leg)
    limit: int
    columns: list[str]
    nprobes: int = 0          # 0 = no ANN index: exact search, no ANN settings
    refine_factor: int = 0
    ef: int = 0               # graph search candidates (IVF_HNSW_SQ); 0 = LanceDB's default
    where: str = ""           # a prefilter (a knowledge scope, storage/index/scope_column.py); '' = every row
    exact: bool = False       # search the prefiltered rows exactly, not through the ANN index


class AsyncTableAt:
    """One LanceDB table opened through the async API, kept at (at least) the version the
    synchronous index reads: a commit seen there (this process's or another's) is checked out
    here before the next search, in the same crossing to the loop."""

    def __init__(self, uri: str, name: str, storage_options: dict[str, str] | None = None,
                 loop: AsyncLoop = LANCE_LOOP) -> None:
        self.uri = uri
        self.name = name
        self.storage_options = storage_options
        self.loop = loop
        self._atbl: Any = None
        self._version = -1

    async def at(self, version: int) -> Any:
        """The AsyncTable at `version` or later (opened on first use, on the loop)."""
        if self._atbl is None:
            db = await lancedb.connect_async(self.uri, storage_options=self.storage_options)
            self._atbl = await db.open_table(self.name)
            self._version = await self._atbl.version()
        if self._version != version:  # a newer commit, or a table made anew under the same name
            await self._atbl.checkout_latest()
            self._version = await self._atbl.version()
        return self._atbl

    def forget(self) -> None:
        """Drop the handle (the table was created or replaced): the next search opens it anew."""
        self._atbl, self._version = None, -1


async def rows(query: Any) -> pa.Table:
    """A query's result as one Arrow table."""
    return await query.to_arrow()


async def _timed(query: Any) -> tuple[Any, float]:
    t0 = time.perf_counter()
    try:
        result = await rows(query)
    except Exception as exc:  # a leg that fails (no FTS index yet, a query the parser rejects) is empty
        result = exc
    return result, (time.perf_counter() - t0) * 1000


def vector_query(atbl: Any, q: LegQuery) -> Any:
    """The vector leg: cosine nearest rows, with the ANN settings when the table has an index."""
    vec = atbl.query().nearest_to(q.vector).distance_type("cosine").limit(q.limit).select([*q.columns, "_distance"])
    if q.exact:  # a small scope: its rows alone, read through the scope's index, beat a filtered graph search
        return vec.where(q.where).bypass_vector_index()
    if q.nprobes:
        vec = vec.nprobes(q.nprobes).refine_factor(max(1, q.refine_factor))
        if q.ef:
            vec = vec.ef(q.ef)
    return vec.where(q.where) if q.where else vec  # the async API prefilters unless told otherwise


def text_query(atbl: Any, q: LegQuery, extra: tuple[str, ...] = ("vector",)) -> Any:
    """The full-text leg; its hits bring their vectors (`extra`), to be scored by cosine like the
    vector leg's."""
    fts = atbl.query().nearest_to_text(q.text, columns="text_norm").limit(q.limit).select([*q.columns, *extra, "_score"])
    return fts.where(q.where) if q.where else fts


async def _both(table: AsyncTableAt, version: int, q: LegQuery) -> tuple[tuple[Any, float], tuple[Any, float]]:
    atbl = await table.at(version)
    if not q.text:
        return await _timed(vector_query(atbl, q)), (None, 0.0)
    vec_out, fts_out = await asyncio.gather(_timed(vector_query(atbl, q)), _timed(text_query(atbl, q)))
    return vec_out, fts_out


def run_legs(table: AsyncTableAt, version: int, q: LegQuery,
             observe: LegObserver | None = None) -> tuple[pa.Table, pa.Table | Exception | None]:
    """(vector leg, full-text leg or the exception that emptied it) of the table at `version` or
    later; a failing vector leg raises. `observe` is told each leg's time."""
    (vec, vec_ms), (fts, fts_ms) = table.loop.run(_both(table, version, q))
    if observe is not None:
        observe(vec_ms, fts_ms)
    if isinstance(vec, Exception):
        raise vec
    return vec, fts
