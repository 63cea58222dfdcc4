"""Questions embedded by ONNX Runtime: the same MiniLM, the same vectors, in less time.

Why: a question's forward pass was the largest part of a turn (the transformer's matrix
products through torch, one small input at a time). The same network exported to ONNX (fp32,
with the mean pooling and normalisation inside) runs faster on ONNX Runtime's fused kernels on
one thread, with the same vectors as torch's (an int8 export is faster still but moves cosines
enough to change the top passage of some questions, so it is not used).

The export runs once per machine, in a child process (exporting traces the model, which must
not touch the copy that embeds passages), into a cache folder; until it is ready, or if it
fails, questions go through torch as before. `python -m models.onnx_query PATH` exports.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

log = logging.getLogger(__name__)
DEFAULT_DIR = Path.home() / ".cache" / "groundbot"
FILE = "minilm-query-fp32.onnx"
MIN_COSINE = 0.99999  # the exported model must give torch's vectors; else it is not used


def export(model_dir: Path, dest: Path) -> None:
    """Export the MiniLM transformer with mean pooling and L2 normalisation to `dest` (atomic)."""
    import torch
    from transformers import AutoModel

    net = AutoModel.from_pretrained(str(model_dir)).eval()

    class Pooled(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.net = net

        def forward(self, input_ids: Any, attention_mask: Any) -> Any:
            out = self.net(input_ids=input_ids, attention_mask=attention_mask,
                           token_type_ids=torch.zeros_like(input_ids)).last_hidden_state
            m = attention_mask.unsqueeze(-1).to(out.dtype)
            pooled = (out * m).sum(1) / m.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(pooled, p=2, dim=1)

    ids = torch.ones((1, 8), dtype=torch.long)
    tmp = dest.with_suffix(f".{os.getpid()}.tmp")
    dest.parent.mkdir(parents=True, exist_ok=True)
    with torch.inference_mode():
        torch.onnx.export(Pooled(), (ids, torch.ones_like(ids)), str(tmp), input_names=["input_ids", "attention_mask"],
                          output_names=["embedding"], opset_version=17, dynamo=False,
                          dynamic_axes={"input_ids": {0: "batch", 1: "tokens"}, "attention_mask": {0: "batch", 1: "tokens"},
                                        "embedding": {0: "batch"}})
    os.replace(tmp, dest)


def exported(model_dir: Path, folder: Path, timeout_s: float = 600.0) -> Path | None:
    """The exported model in `folder`, exported first (in a child process) if missing; None if that
    fails or another process is exporting it (a lock file younger than `timeout_s`): many workers or
    CLI runs starting at once on a new machine run one export, not one each."""
    dest = folder / FILE
    if dest.exists():
        return dest
    lock = folder / (FILE + ".lock")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        if lock.exists() and time.time() - lock.stat().st_mtime > timeout_s:
            lock.unlink(missing_ok=True)  # left by an export that died
        os.close(os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except OSError:
        return None  # another process is exporting (or the folder is not writable): torch meanwhile
    try:
        subprocess.run([sys.executable, "-m", "models.onnx_query", str(model_dir), str(dest)], check=True,
                       capture_output=True, timeout=timeout_s, cwd=Path(__file__).resolve().parents[2])
    except (OSError, subprocess.SubprocessError) as exc:
        log.warning("questions stay on torch: the ONNX export failed (%s)", str(exc).splitlines()[0][:200])
        return None
    finally:
        lock.unlink(missing_ok=True)
    return dest if dest.exists() else None


class OnnxQueryModel:
    """One ONNX Runtime session on one thread (a question gains nothing from two)."""

    def __init__(self, path: Path, tokenizer: Any) -> None:
        import onnxruntime as ort

        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1
        opts.inter_op_num_threads = 1
        self.session = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
        self.tok = tokenizer

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        enc = self.tok.encode_batch(list(texts))
        ids = np.asarray([e.ids for e in enc], dtype=np.int64)
        mask = np.asarray([e.attention_mask for e in enc], dtype=np.int64)
        out = self.session.run(None, {"input_ids": ids, "attention_mask": mask})[0]
        return np.asarray(out, dtype=np.float32)


if __name__ == "__main__":
    export(Path(sys.argv[1]), Path(sys.argv[2]))
