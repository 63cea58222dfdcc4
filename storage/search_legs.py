"""The two legs of a hybrid search (vector and full text), sent to LanceDB together.

Why: LanceDB's synchronous API hands every call to its event-loop thread and waits for it,
and a hybrid search asked for the vector leg, then the full-text leg, then the table version,
each a round trip. Here both legs are one coroutine run on that loop: the Rust engine runs them
concurrently and the calling thread crosses to the loop once per search. The time of each leg
is kept (`LegTimes`), so a benchmark can say which one misses its budget.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa


@dataclass
class LegTimes:
    """Wall-clock milliseconds of the last search's legs (measured inside the event loop)."""

    vector_ms: float = 0.0
    text_ms: float = 0.0


@dataclass(frozen=True)
class LegQuery:
    vector: np.ndarray
    text: str                 # full-text terms ('' = no full-text leg)
    limit: int
    columns: list[str]
    nprobes: int = 0          # 0 = no ANN index: exact search, no ANN settings
    refine_factor: int = 0
    ef: int = 0               # graph search candidates (IVF_HNSW_SQ); 0 = LanceDB's default


def async_table(tbl: Any) -> Any | None:
    """The AsyncTable behind a synchronous LanceDB table (None if this LanceDB has none)."""
    from lancedb.table import AsyncTable

    inner = getattr(tbl, "_table", None)
    return inner if isinstance(inner, AsyncTable) else None


async def _rows(query: Any) -> pa.Table:
    """A query's result, read straight from LanceDB's native stream. Its `to_arrow()` first fetches
    the table's schema and walks it for blob columns (the chunk and suggestion tables have none),
    then copies the batches through two more readers: each step more work for the one event-loop
    thread every search in the process goes through. Falls back to `to_arrow()` on a LanceDB
    without the native query object."""
    inner = getattr(query, "_inner", None)
    if inner is None or not hasattr(inner, "execute"):
        return await query.to_arrow()
    stream = await inner.execute(None, None)
    return pa.Table.from_batches([batch async for batch in stream], stream.schema)


async def _timed(query: Any) -> tuple[Any, float]:
    t0 = time.perf_counter()
    try:
        result = await _rows(query)
    except Exception as exc:  # a leg that fails (no FTS index yet, a query the parser rejects) is empty
        result = exc
    return result, (time.perf_counter() - t0) * 1000


def vector_query(atbl: Any, q: LegQuery) -> Any:
    """The vector leg: cosine nearest rows, with the ANN settings when the table has an index."""
    vec = atbl.query().nearest_to(q.vector).distance_type("cosine").limit(q.limit).select([*q.columns, "_distance"])
    if q.nprobes:
        vec = vec.nprobes(q.nprobes).refine_factor(max(1, q.refine_factor))
        if q.ef:
            vec = vec.ef(q.ef)
    return vec


def text_query(atbl: Any, q: LegQuery, extra: tuple[str, ...] = ("vector",)) -> Any:
    """The full-text leg; its hits bring their vectors (`extra`), to be scored by cosine like the
    vector leg's."""
    return atbl.query().nearest_to_text(q.text, columns="text_norm").limit(q.limit).select(
        [*q.columns, *extra, "_score"])


async def _both(atbl: Any, q: LegQuery) -> tuple[tuple[Any, float], tuple[Any, float]]:
    if not q.text:
        return await _timed(vector_query(atbl, q)), (None, 0.0)
    vec_out, fts_out = await asyncio.gather(_timed(vector_query(atbl, q)), _timed(text_query(atbl, q)))
    return vec_out, fts_out


def run_legs(atbl: Any, q: LegQuery, times: LegTimes) -> tuple[pa.Table, pa.Table | Exception | None]:
    """(vector leg, full-text leg or the exception that emptied it); a failing vector leg raises."""
    from lancedb.background_loop import LOOP

    (vec, vec_ms), (fts, fts_ms) = LOOP.run(_both(atbl, q))
    times.vector_ms, times.text_ms = vec_ms, fts_ms
    if isinstance(vec, Exception):
        raise vec
    return vec, fts
