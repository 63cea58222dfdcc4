"""ANN index shape by table size, query parameters, and the retraining rule (storage/index/ann.py)."""

from __future__ import annotations

import pytest

from storage.index.ann import AnnPlan, SearchIndexSettings, ef_for, needs_retraining, nprobes_for, plan_for


def test_partitions_follow_the_table_size_and_sub_vectors_divide_the_dimension() -> None:
    s = SearchIndexSettings()
    small, big = plan_for(50_000, 384, s), plan_for(1_000_000, 384, s)
    assert (small.partitions, big.partitions) == (3, 61)  # rows / 16384
    assert small.index_type == "IVF_HNSW_SQ"
    assert plan_for(1_000_000, 384, SearchIndexSettings(rows_per_partition=4096)).partitions == 244
    assert plan_for(2000, 384, SearchIndexSettings(rows_per_partition=100)).partitions == 7  # at most rows / 256
    assert small.sub_vectors == big.sub_vectors == 48
    assert plan_for(10_000, 100, s).sub_vectors == 10  # 100 // 8 = 12 does not divide 100; 10 does
    fixed = plan_for(1_000_000, 384, SearchIndexSettings(partitions=256, sub_vectors=96))
    assert (fixed.partitions, fixed.sub_vectors) == (256, 96)


def test_nprobes_is_a_share_of_the_partitions_with_a_floor_or_the_configured_number() -> None:
    s = SearchIndexSettings(probe_share=0.05, min_nprobes=20)
    assert nprobes_for(AnnPlan("IVF_PQ", 1000, 48, 1_000_000), s) == 50
    assert nprobes_for(AnnPlan("IVF_PQ", 244, 48, 1_000_000), s) == 20
    assert nprobes_for(AnnPlan("IVF_PQ", 224, 48, 50_000), s) == 20
    assert nprobes_for(AnnPlan("IVF_PQ", 10, 48, 100), s) == 10  # never more than there are
    assert nprobes_for(AnnPlan("IVF_PQ", 1000, 48, 1_000_000), SearchIndexSettings(nprobes=7)) == 7


def test_graph_search_width_is_set_only_for_a_graph_index() -> None:
    s = SearchIndexSettings(ef=400)
    assert ef_for(AnnPlan("IVF_HNSW_SQ", 61, 48, 1_000_000), s) == 400
    assert ef_for(AnnPlan("IVF_PQ", 61, 48, 1_000_000), s) == 0  # no graph: LanceDB's own query
    assert ef_for(None, s) == 0  # exact search
    assert ef_for(AnnPlan("IVF_HNSW_SQ", 1, 48, 10_000), SearchIndexSettings(ef=0)) == 0


def test_retrain_only_past_the_size_floor_and_the_drift_share() -> None:
    s = SearchIndexSettings(ann_min_rows=1000, retrain_share=0.25)
    plan = AnnPlan("IVF_PQ", 32, 48, 1000)
    assert not needs_retraining(None, 999, 0, s)  # small tables are searched exactly
    assert needs_retraining(None, 1000, 0, s)  # first training
    assert not needs_retraining(plan, 2000, 500, s)  # 500 of 2000 rows written: extend
    assert needs_retraining(plan, 2000, 501, s)  # past a quarter: retrain


def test_bad_settings_are_refused_with_a_clear_message() -> None:
    with pytest.raises(ValueError, match="index_type"):
        SearchIndexSettings(index_type="HNSW")
    with pytest.raises(ValueError, match="retrain_share"):
        SearchIndexSettings(retrain_share=0)
