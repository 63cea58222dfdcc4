"""The approximate-nearest-neighbour (ANN) side of the chunk index: which index a table of a
given size gets, how it is queried, and when an ingest retrains it instead of extending it.

Why: a default IVF_PQ index queried without `refine_factor` loses most of its recall on tables
of tens of thousands of rows and more, and retraining both indexes on every ingest
costs minutes. Here the partitions and sub-vectors follow the table's size, every ANN query
re-ranks its candidates on the stored vectors, and an ingest extends the existing indexes
(LanceDB's `optimize`) until the rows written since the last training exceed a share of the
table (`retrain_share`), when a full retrain is worth it.

The default index is IVF_HNSW_SQ (a graph per partition over 8-bit scalar-quantised vectors):
IVF_PQ's recall is bounded by the partitions a query does not probe, whatever its sub-vectors and
refine factor, while a graph search per partition is cheap enough to probe many of them. A graph
search is bounded by its candidate list (ef), which LanceDB would size from limit x refine_factor;
the re-ranking is the expensive part (a read of each candidate's full vector), so the candidate
list is set on its own (`ef`) and only the returned rows are re-ranked (refine 1, which keeps their
cosines exact). The recall and latency of each choice are in bench/README.md ("Scale") and the
scale results it names.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

VECTOR_INDEX = "vector_idx"  # LanceDB's name for the index on the `vector` column
TEXT_INDEX = "text_norm_idx"
ANN_KEY = "groundbot:ann"  # vector-field metadata: the trained plan and the rows written since training


@dataclass(frozen=True)
class SearchIndexSettings:
    """[search_index] in config.toml: how the chunk and suggestion tables are indexed and read."""

    ann_min_rows: int = 8_000
    """Tables smaller than this are searched exactly."""
    index_type: str = "IVF_HNSW_SQ"
    """The ANN index from ann_min_rows on: "IVF_HNSW_SQ" or "IVF_PQ"."""
    partitions: int = 0
    """IVF partitions; 0 = rows / rows_per_partition when trained (at most rows / 256)."""
    rows_per_partition: int = 16384
    """Rows per IVF partition when partitions = 0."""
    sub_vectors: int = 0
    """IVF_PQ only: sub-vectors; 0 = dimension / 8 (48 for 384-d vectors)."""
    nprobes: int = 0
    """Partitions one query searches; 0 = max(min_nprobes, probe_share x partitions)."""
    probe_share: float = 0.4
    """Share of the partitions searched when nprobes = 0."""
    min_nprobes: int = 20
    """A query searches at least this many partitions, so a table of up to 20 x rows_per_partition is searched whole."""
    refine_factor: int = 1
    """An ANN query re-ranks refine_factor x candidates on their stored vectors."""
    ef: int = 1600
    """IVF_HNSW_SQ: the graph search's candidate list; 0 = candidates x refine_factor."""
    retrain_share: float = 0.25
    """Rows written since training / rows above which the ANN index is retrained."""
    scope_exact_rows: int = 1_000
    """A knowledge scope with at most this many rows is searched exactly, larger ones by the ANN index."""
    scope_tables: bool = True
    """Each knowledge scope gets a table of its own (docs/scopes.md); false: one table and a prefilter."""

    def __post_init__(self) -> None:
        if self.index_type not in ("IVF_PQ", "IVF_HNSW_SQ"):
            raise ValueError(f"[search_index] index_type must be 'IVF_PQ' or 'IVF_HNSW_SQ', not {self.index_type!r}")
        if not 0 < self.retrain_share <= 1 or not 0 < self.probe_share <= 1:
            raise ValueError("[search_index] retrain_share and probe_share must be in (0, 1]")


@dataclass(frozen=True)
class AnnPlan:
    """The index trained for a table: its shape, recorded next to the table (groundbot-index.json)."""

    index_type: str
    partitions: int
    sub_vectors: int
    rows_at_training: int

    def to_dict(self) -> dict[str, Any]:
        return {"index_type": self.index_type, "partitions": self.partitions, "sub_vectors": self.sub_vectors,
                "rows_at_training": self.rows_at_training}

    @classmethod
    def from_dict(cls, raw: dict[str, Any] | None) -> AnnPlan | None:
        if not raw:
            return None
        return cls(str(raw["index_type"]), int(raw["partitions"]), int(raw["sub_vectors"]), int(raw["rows_at_training"]))


def plan_for(rows: int, dim: int, s: SearchIndexSettings) -> AnnPlan:
    """About `rows_per_partition` rows per IVF partition (k-means training costs partitions x
    256 samples x partitions, which grows with the square of the partitions: sqrt(rows) of them
    make a large table's training far longer), at most rows / 256 (what LanceDB trains), and for
    IVF_PQ sub-vectors of 8 dimensions (twice LanceDB's default resolution; finer ones make each
    code longer without adding recall, bench/README.md "Scale")."""
    partitions = s.partitions or max(1, min(rows // max(1, s.rows_per_partition), rows // 256))
    sub_vectors = s.sub_vectors or max(1, dim // 8)
    while dim % sub_vectors:  # PQ needs sub-vectors that divide the dimension
        sub_vectors -= 1
    return AnnPlan(s.index_type, partitions, sub_vectors, rows)


def index_config(plan: AnnPlan) -> Any:
    """The LanceDB index configuration object for a plan (cosine distance: vectors are unit-length)."""
    from lancedb.index import HnswSq, IvfPq

    if plan.index_type == "IVF_HNSW_SQ":
        return HnswSq(distance_type="cosine", num_partitions=plan.partitions)
    return IvfPq(distance_type="cosine", num_partitions=plan.partitions, num_sub_vectors=plan.sub_vectors)


def nprobes_for(plan: AnnPlan, s: SearchIndexSettings) -> int:
    """Partitions one query searches: the configured number, else a share of the partitions."""
    wanted = s.nprobes or max(s.min_nprobes, math.ceil(plan.partitions * s.probe_share))
    return max(1, min(wanted, plan.partitions))


MIN_SCOPED_EF = 100  # a scoped graph search's candidate list is never narrower than this


def ef_for(plan: AnnPlan | None, s: SearchIndexSettings, share: float = 1.0) -> int:
    """The graph search's candidate list for a query (0 = LanceDB's default). Set apart from the
    refine factor, a wide graph search keeps recall while only a few candidates are re-ranked on
    their stored vectors (each a read of a full vector, the most expensive step of a query).
    A query prefiltered to a knowledge scope holding `share` of the rows fills its list with that
    scope's rows only, so the list shrinks with the share: the graph walk then visits about as
    many nodes as an unscoped query (with the full list, a small scope's walk passes over other
    scopes' rows until its list fills, visiting many times as many)."""
    if plan is None or plan.index_type != "IVF_HNSW_SQ":
        return 0
    return s.ef if share >= 1.0 else max(MIN_SCOPED_EF, min(s.ef, round(s.ef * share)))


def needs_retraining(plan: AnnPlan | None, rows: int, written_since_training: int, s: SearchIndexSettings) -> bool:
    """The documented rule: train when the table first reaches `ann_min_rows`, and retrain when
    the rows written (added or changed) since training exceed `retrain_share` of the table; in
    between an ingest only extends the index (new rows go to the trained partitions)."""
    if rows < s.ann_min_rows:
        return False
    if plan is None:
        return True
    return written_since_training > s.retrain_share * rows


def ann_state(tbl: Any) -> tuple[AnnPlan | None, int]:
    """A table's trained ANN plan and the rows written since its training, kept as metadata of
    its vector field (so it travels with the table, on disk or on object storage)."""
    raw = (tbl.schema.field("vector").metadata or {}).get(ANN_KEY.encode())
    if not raw:
        return None, 0
    data = json.loads(raw)
    return AnnPlan.from_dict(data.get("plan")), int(data.get("written_since_training", 0))


def set_ann_state(tbl: Any, plan: AnnPlan | None, written: int) -> None:
    state = json.dumps({"plan": plan.to_dict() if plan else None, "written_since_training": written})
    tbl.update_field_metadata({"path": "vector", "metadata": {ANN_KEY: state}})


def maintain_table(tbl: Any, written: int, dim: int, s: SearchIndexSettings,
                   build_text_index: Callable[[], None] | None = None) -> str:
    """After a write of `written` rows: build the full-text index if missing, train or retrain
    the ANN index when `needs_retraining` says so, then `optimize()` (compaction, and the new
    rows added to every existing index). Says what was done."""
    plan, since = ann_state(tbl)
    since += written
    indexes = {i.name for i in tbl.list_indices()}
    action = "extended" if plan is not None or VECTOR_INDEX in indexes else "exact search (below ann_min_rows)"
    if build_text_index is not None and TEXT_INDEX not in indexes:
        build_text_index()
        action = "text index built"
    if needs_retraining(plan, tbl.count_rows(), since, s):
        plan, since = plan_for(tbl.count_rows(), dim, s), 0
        tbl.create_index("vector", config=index_config(plan), replace=True)
        action = f"ANN index trained ({plan.index_type}, {plan.partitions} partitions)"
    tbl.optimize()
    set_ann_state(tbl, plan, since)
    return action


class SearchPlans:
    """The ANN plan each table's queries use (None: searched exactly), read from the table's
    schema once per table version rather than on every query."""

    def __init__(self) -> None:
        self._plans: dict[int, tuple[int, AnnPlan | None]] = {}

    def plan(self, tbl: Any, version: int | None = None) -> AnnPlan | None:
        """`tbl`'s plan at `version` (when the caller knows it, else the table is asked)."""
        if tbl is None:
            return None
        version = tbl.version if version is None else version
        cached = self._plans.get(id(tbl))
        if cached is None or cached[0] != version:
            cached = self._plans[id(tbl)] = (version, ann_state(tbl)[0])
        return cached[1]
