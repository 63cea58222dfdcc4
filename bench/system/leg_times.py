"""The last search's two leg times, as LanceChunkIndex.observe_legs reports them: what the scale and
latency benchmarks record per search (the product keeps no timing state)."""

from __future__ import annotations


class LastLegs:
    """An observer for LanceChunkIndex.observe_legs holding the latest search's leg times (ms)."""

    def __init__(self) -> None:
        self.vector_ms = 0.0
        self.text_ms = 0.0

    def __call__(self, vector_ms: float, text_ms: float) -> None:
        self.vector_ms, self.text_ms = vector_ms, text_ms
