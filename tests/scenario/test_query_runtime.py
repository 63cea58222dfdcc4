"""Questions are embedded by ONNX Runtime once the exported model is ready, with the vectors
torch (and SentenceTransformer) give; a model that cannot be used leaves them on torch."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from models.embedders import MiniLMEmbedder
from models.onnx_query import FILE

QUESTIONS = ["how do i reset the device after an update?", "opening hours of the museum on sundays",
             "wer hat das telefon erfunden", "what is groundbot?"]


def test_questions_go_through_onnx_runtime_with_the_same_vectors(embedder: Any) -> None:
    assert embedder.wait_query_runtime() == "onnxruntime"
    one_by_one = np.concatenate([embedder.embed_queries([q]) for q in QUESTIONS])
    together = embedder.embed_queries(QUESTIONS)  # padded to the longest: the mask keeps pads out
    reference = embedder._encode(QUESTIONS)  # SentenceTransformer.encode, as passages are embedded
    assert np.allclose(one_by_one, reference, atol=1e-5) and np.allclose(together, reference, atol=1e-5)


def test_an_exported_model_is_loaded_by_the_constructor_not_by_a_background_thread(embedder: Any) -> None:
    """A native session built on a daemon thread could still be loading when a short `groundbot
    ask` exits, which aborted the process; with the export on disk nothing runs in the background."""
    import threading

    embedder.wait_query_runtime()
    again = MiniLMEmbedder()
    assert again._onnx is not None and again._onnx_ready.is_set()
    assert not [t for t in threading.enumerate() if t.name == "groundbot-onnx-export" and t.is_alive()]


def test_a_model_that_cannot_be_loaded_leaves_questions_on_torch(tmp_path: Path, embedder: Any) -> None:
    (tmp_path / FILE).write_bytes(b"not an onnx model")
    fallback = MiniLMEmbedder(onnx_dir=tmp_path)
    assert fallback.wait_query_runtime() == "torch"
    assert np.allclose(fallback.embed_queries(QUESTIONS), embedder._encode(QUESTIONS), atol=1e-5)


def test_one_export_at_a_time_on_a_machine(tmp_path: Path) -> None:
    """Workers starting together on a new machine: one exports, the others stay on torch."""
    from models.onnx_query import exported

    (tmp_path / (FILE + ".lock")).write_text("")
    assert exported(tmp_path / "no-model", tmp_path) is None
    assert not (tmp_path / FILE).exists() and (tmp_path / (FILE + ".lock")).exists()
