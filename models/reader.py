"""The passage reader: a small cross-encoder that reads (question, chunk) and gives the
probability that the chunk answers the question (core.ports.PassageReader). groundbot reranks the
retrieved chunks by it, refuses when no chunk answers, and quotes only from chunks it trusts.

The model is the first layers of the shipped all-MiniLM-L6-v2 fine-tuned by
`python -m bench.training.reader` and exported to ONNX with int8 weights (models/reader.onnx,
described in models/reader.md). Each chunk is read in a run of its own at its own length:
its probability depends on the question and the chunk alone (the int8 activations are quantized
over a whole run, so in a batch, or padded, a pair's probability moved with its batch mates and
its padding), and a run of its own reads no padding, which a batch carries up to its longest pair
(bench/README.md has the timings).
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from models.onnx_pairs import OnnxPairModel

MODEL_FILE = Path(__file__).resolve().parent / "reader.onnx"
MAX_TOKENS = 128  # word pieces per pair, as trained (the passage view is cut in words before: core/gate/reader_view.py)


class OnnxReader:
    """Scores (question, passage view) pairs with the exported cross-encoder on the CPU, `threads`
    pairs at once (one onnxruntime thread each: a question's wait shrinks on a machine with cores to
    spare, its CPU time does not grow, and each pair's probability is the same whatever runs beside it)."""

    def __init__(self, model_path: Path | str = MODEL_FILE, threads: int = 1) -> None:
        self.model = OnnxPairModel(model_path, MAX_TOKENS, 1, rebuild="python -m bench.training.reader", pad_to=None)
        self.pool = ThreadPoolExecutor(threads, thread_name_prefix="groundbot-reader") if threads > 1 else None

    def score(self, question: str, passages: Sequence[str]) -> list[float]:
        """One run for each passage, unpadded: the same pair, the same probability, whatever else is read."""
        pairs = [(question, p) for p in passages]
        if self.pool is None or len(pairs) < 2:
            return self.model.probabilities(pairs, batch=1)
        return list(self.pool.map(lambda pair: self.model.probabilities([pair])[0], pairs))
