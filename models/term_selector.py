"""The term selector (core.ports.TermSelector): a token classifier that reads a follow-up's
earlier turns and the question, and gives each earlier word the probability that a person
rewriting the question into one of its own would add it (core/retrieve/terms.py).

The model is the shipped all-MiniLM-L6-v2 with a token-classification head, fine-tuned on human
rewrites by `python -m bench.training.term_selector` and exported to ONNX with int8 weights
(models/terms.onnx, described in models/terms.md). A pair is run alone at its own
length: its probabilities depend on the words read and nothing else.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from models.onnx_pairs import tokenizer_file

MODEL_FILE = Path(__file__).resolve().parent / "terms.onnx"
MAX_TOKENS = 256  # word pieces per (earlier words, question), as trained; the oldest earlier words are cut first
REBUILD = "python -m bench.training.term_selector"


class OnnxTermSelector:
    """(earlier words, question words) -> one probability per earlier word, on the CPU."""

    name = "terms-minilm"

    def __init__(self, model_path: Path | str = MODEL_FILE, threads: int = 1) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        if not Path(model_path).is_file():
            raise FileNotFoundError(f"model not found: {model_path} (rebuild it with `{REBUILD}`)")
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        self.session: Any = ort.InferenceSession(str(model_path), opts, providers=["CPUExecutionProvider"])
        tok = Tokenizer.from_file(str(tokenizer_file()))
        tok.no_padding()
        tok.enable_truncation(max_length=MAX_TOKENS, strategy="only_first", direction="left")
        self.tok = tok

    def probabilities(self, history: Sequence[str], question: Sequence[str]) -> list[float]:
        """One probability per earlier word (0.0 for a word cut off the front of a long history)."""
        if not history or not question:
            return [0.0] * len(history)
        enc = self.tok.encode(list(history), list(question), is_pretokenized=True)
        feed = {"input_ids": np.asarray([enc.ids], dtype=np.int64),
                "attention_mask": np.asarray([enc.attention_mask], dtype=np.int64),
                "token_type_ids": np.asarray([enc.type_ids], dtype=np.int64)}
        (probs,) = self.session.run(None, feed)
        out = [0.0] * len(history)
        seen: set[int] = set()
        for p, seq, word in zip(np.asarray(probs)[0], enc.sequence_ids, enc.word_ids, strict=True):
            if seq == 0 and word is not None and word not in seen:  # a word's first word piece speaks for it
                seen.add(word)
                out[word] = float(p)
        return out
