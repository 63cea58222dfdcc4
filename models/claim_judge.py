"""The claim judge: a small cross-encoder that reads (question, claim, evidence) and gives the
probability that the evidence states the claim as an answer to the question
(core.ports.ClaimJudge).

It exists for the answers the lexical checks cannot tell apart: a wrong name or number taken
from the same passage, or a fluent sentence every word of which is in the evidence but which
says something else. Trained by `python -m bench.training.claim_judge.train` on real LLM claims
judged by experts (ExpertQA), FEVER's edited evidence, long-form answers, dialogue, summaries and
HaluEval QA answers in several forms, so that the form of an answer should not decide
(models/claims.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from models.onnx_pairs import OnnxPairModel, clip

MODEL_FILE = Path(__file__).resolve().parent / "claims.onnx"
QUESTION_WORDS = 30
CLAIM_WORDS = 50
EVIDENCE_WORDS = 110  # the support passage (core.verify.evidence.support_passage) with its title
MAX_TOKENS = 256  # the pair, in word pieces, as trained


def claim_pair(question: str, claim: str, evidence: str) -> tuple[str, str]:
    """The two texts the model reads: question and claim (the claim alone when there is no
    question, as for a summary sentence in training), then the evidence; cut as in training."""
    head = clip(question, QUESTION_WORDS)
    first = f"{head} => {clip(claim, CLAIM_WORDS)}" if head else clip(claim, CLAIM_WORDS)
    return first, clip(evidence, EVIDENCE_WORDS) or "-"


class OnnxClaimJudge:
    """Scores (question, claim, evidence) triples with the exported cross-encoder on the CPU."""

    def __init__(self, model_path: Path | str = MODEL_FILE, threads: int = 1) -> None:
        self.model = OnnxPairModel(model_path, MAX_TOKENS, threads, rebuild="python -m bench.training.claim_judge.train")

    def score(self, question: str, claims: Sequence[tuple[str, str]]) -> list[float]:
        return self.model.probabilities([claim_pair(question, c, e) for c, e in claims])
