"""The micro-batching queue of query embeddings (models/embedders.BatchingEmbedder)."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

import numpy as np
import pytest

from models.embedders import BatchingEmbedder


class SlowEmbedder:
    """Each call takes 20 ms (or `delay`) whatever its size (a forward pass's fixed cost); vectors encode the text."""

    name = "slow"
    dim = 4

    def __init__(self, fail: bool = False, delay: float = 0.02) -> None:
        self.calls: list[int] = []
        self.fail = fail
        self.delay = delay

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        time.sleep(self.delay)
        self.calls.append(len(texts))
        if self.fail:
            raise RuntimeError("model broke")
        return np.array([[len(t), ord(t[0]), 0, 1] for t in texts], dtype=np.float32)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self.embed_queries(texts)


def run_concurrently(emb: BatchingEmbedder, n: int) -> dict[int, np.ndarray | BaseException]:
    out: dict[int, np.ndarray | BaseException] = {}
    start = threading.Barrier(n)

    def ask(i: int) -> None:
        start.wait()
        try:
            out[i] = emb.embed_queries([chr(65 + i) * (i + 1)])
        except BaseException as exc:
            out[i] = exc

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    return out


def test_concurrent_questions_share_forward_passes_and_each_gets_its_own_vector() -> None:
    inner = SlowEmbedder()
    emb = BatchingEmbedder(inner, max_batch=32)
    out = run_concurrently(emb, 16)
    assert len(out) == 16
    for i, vec in out.items():
        assert isinstance(vec, np.ndarray) and vec.shape == (1, 4)
        assert vec[0, 0] == i + 1 and vec[0, 1] == 65 + i  # the caller's own text, not a neighbour's
    assert sum(inner.calls) == 16 and len(inner.calls) < 16  # fewer passes than questions


def test_a_lone_question_is_embedded_at_once_and_batches_respect_the_cap() -> None:
    inner = SlowEmbedder()
    emb = BatchingEmbedder(inner, max_batch=4)
    t0 = time.perf_counter()
    assert emb.embed_queries(["hello"]).shape == (1, 4)
    assert time.perf_counter() - t0 < 0.5 and inner.calls == [1]
    run_concurrently(emb, 12)
    assert max(inner.calls) <= 4


def _second_arrives_during_the_first_pass(emb: BatchingEmbedder) -> float:
    """Seconds until both of two questions have vectors, the second asked 50 ms into the first's pass."""
    threads = [threading.Thread(target=emb.embed_queries, args=([t],)) for t in ("first", "second")]
    t0 = time.perf_counter()
    threads[0].start()
    time.sleep(0.05)
    threads[1].start()
    for t in threads:
        t.join(5)
    return time.perf_counter() - t0


def test_two_leaders_run_two_passes_at_once() -> None:
    """With leaders=2 a question arriving while a pass runs gets a pass of its own at once
    (the ONNX session takes concurrent runs, one per core) instead of waiting for the first."""
    inner = SlowEmbedder(delay=0.2)
    assert _second_arrives_during_the_first_pass(BatchingEmbedder(inner, leaders=2)) < 0.35  # 0.25 s
    assert inner.calls == [1, 1]
    one = SlowEmbedder(delay=0.2)
    assert _second_arrives_during_the_first_pass(BatchingEmbedder(one, leaders=1)) >= 0.38  # waited: 0.4 s
    assert one.calls == [1, 1]


def test_a_failing_model_fails_every_waiting_caller_and_none_hangs() -> None:
    emb = BatchingEmbedder(SlowEmbedder(fail=True))
    out = run_concurrently(emb, 6)
    assert len(out) == 6 and all(isinstance(v, RuntimeError) for v in out.values())
    with pytest.raises(RuntimeError, match="model broke"):
        emb.embed_queries(["again"])
