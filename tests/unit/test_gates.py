from dataclasses import replace

from core import reasons
from core.gate.similarity_gates import keyword_coverage, run_gates
from core.settings import GateSettings
from tests.unit.fakes import hit

CFG = GateSettings()
LONG = "groundbot re-ingests documents incrementally by content hash, in a single commit. " * 2


def test_pass_keeps_chunks_above_floor() -> None:
    g = run_gates("how to re-ingest documents", [hit(LONG, 0.8), hit(LONG, 0.6), hit("x", 0.1)], CFG)
    assert g.passed and len(g.kept) == 2
    assert g.scores["top1_similarity"] == 0.8


def test_no_hits() -> None:
    g = run_gates("q", [], CFG)
    assert not g.passed and g.reason == reasons.NO_MATCHING_SOURCE


def test_order_offtopic_then_top1_then_mean_then_context() -> None:
    assert run_gates("q", [hit(LONG, 0.05)], CFG).reason == reasons.OFF_TOPIC
    assert run_gates("q", [hit(LONG, 0.3)], CFG).reason == reasons.NO_MATCHING_SOURCE
    low_mean = [hit(LONG, 0.5), hit(LONG, 0.1), hit(LONG, 0.1)]
    assert run_gates("q", low_mean, CFG).reason == reasons.LOW_CONFIDENCE
    assert run_gates("q", [hit("short text", 0.9)], replace(CFG, mean_top_n=1)).reason == reasons.INSUFFICIENT_CONTEXT


def test_keyword_coverage_only_warns() -> None:
    g = run_gates("zebra migration patterns", [hit(LONG, 0.9)], replace(CFG, mean_top_n=1))
    assert g.passed and g.warnings == ["keyword_coverage"]
    assert keyword_coverage("re-ingest documents", [hit(LONG)]) == 1.0



def test_near_duplicate_suggestions_are_offered_once() -> None:
    import numpy as np

    from core.turn.nearest_suggestions import suggest

    a, b, c = np.array([1.0, 0.0, 0.0]), np.array([0.999, 0.0447, 0.0]), np.array([0.6, 0.8, 0.0])
    b, q = b / np.linalg.norm(b), np.array([0.9, 0.436, 0.0])
    got = suggest("question", q / np.linalg.norm(q), [("How do I ingest?", a), ("How to ingest?", b), ("Other", c)], 0.1, 3)
    assert got == ["How to ingest?", "Other"]  # the nearer of the two near-duplicates
