"""The answerability judge: a small cross-encoder that reads (question, candidate passage) and
gives the probability that the passage answers the question (core.ports.AnswerJudge).

The model is the first layers of the shipped all-MiniLM-L6-v2 fine-tuned by
`python -m bench.training.answerability.train` and exported to ONNX with int8 weights
(storage/models/answerability.onnx, described in storage/models/answerability.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from storage.onnx_pairs import OnnxPairModel, clip

MODEL_FILE = Path(__file__).resolve().parent / "models" / "answerability.onnx"
QUESTION_WORDS = 30  # longer questions are cut to their first words
PASSAGE_WORDS = 50  # so is a passage (title, then the candidate sentence)
MAX_TOKENS = 96  # the pair, in word pieces, as trained


def pair(question: str, passage: str) -> tuple[str, str]:
    """The two texts the model reads, cut as in training."""
    return clip(question, QUESTION_WORDS), clip(passage, PASSAGE_WORDS) or "-"


class OnnxAnswerJudge:
    """Scores (question, passage) pairs with the exported cross-encoder on the CPU."""

    def __init__(self, model_path: Path | str = MODEL_FILE, threads: int = 1) -> None:
        self.model = OnnxPairModel(model_path, MAX_TOKENS, threads, rebuild="python -m bench.training.answerability.train")

    def score(self, question: str, passages: Sequence[str]) -> list[float]:
        return self.model.probabilities([pair(question, p) for p in passages])
