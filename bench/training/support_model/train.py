"""Train the claim-support model (core/verify/model.json) on the HaluEval QA dev split.

    python -m bench.training.support_model.train [--halueval FILE] [--out core/verify/model.json]

Records whose index % 5 == 0 are held out ("test") and never used here; the grounding
benchmark reports the model on them. Positives are the right answers, as given and
restated as a full sentence (so the model cannot learn "short means right"); negatives
are the hallucinated answers. The model is a logistic regression over the features of
core/claim_features.py, fitted with plain gradient descent (seeded, deterministic).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from bench.datasets import HALUEVAL_FILE, TEST_EVERY
from core.messages import Hit
from core.settings import VerifySettings
from core.text.sentences import split_claims
from core.verify import critical_tokens, evidence_sentences
from core.verify.features import FEATURES, claim_evidence
from core.verify.model import MODEL_PATH, ClaimModel


def restate(question: str, answer: str) -> str:
    """A right answer restated as a full sentence that repeats the question."""
    return f"{question.strip().rstrip('?').strip()}: {answer.strip()}."


def answer_features(answer: str, question: str, knowledge: str, short_words: int) -> list[list[float]]:
    sentences = evidence_sentences([Hit("k", "k", "", "", "", knowledge, 1.0)], [1])  # as the verifier sees it
    rows = []
    for claim in split_claims(answer):
        ev = claim_evidence(claim.text, question, sentences, short_words, critical_tokens(claim.text))
        rows.append([ev.features[n] for n in FEATURES])
    return rows


def build(records: list[dict[str, str]], short_words: int) -> tuple[np.ndarray, np.ndarray]:
    xs: list[list[float]] = []
    ys: list[int] = []
    for r in records:
        for answer, label in ((r["right_answer"], 1), (restate(r["question"], r["right_answer"]), 1),
                              (r["hallucinated_answer"], 0)):
            for row in answer_features(answer, r["question"], r["knowledge"], short_words):
                xs.append(row)
                ys.append(label)
    return np.asarray(xs, dtype=float), np.asarray(ys, dtype=float)


# More evidence may never lower the support probability: support features get weights >= 0,
# contradiction features (negation mismatch, missing names/numbers) weights <= 0.
SIGNS = {"neg_mis": -1, "crit_miss": -1, "no_novel": 0}


def fit(x: np.ndarray, y: np.ndarray, l2: float = 1e-3, steps: int = 4000, lr: float = 0.5) -> ClaimModel:
    mu = x.mean(axis=0)
    sd = x.std(axis=0) + 1e-6
    z = np.hstack([(x - mu) / sd, np.ones((len(x), 1))])
    w = np.zeros(z.shape[1])
    signs = np.array([SIGNS.get(n, 1) for n in FEATURES], dtype=float)
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-z @ w))
        grad = z.T @ (p - y) / len(y) + l2 * np.r_[w[:-1], 0.0]
        w -= lr * grad
        head = w[:-1]
        head[(signs > 0) & (head < 0)] = 0.0  # projected gradient: keep the model monotone
        head[(signs < 0) & (head > 0)] = 0.0
    return ClaimModel(FEATURES, tuple(map(float, mu)), tuple(map(float, sd)), tuple(map(float, w[:-1])),
                      float(w[-1]), {})


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.training.support_model.train", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--halueval", type=Path, default=HALUEVAL_FILE)
    ap.add_argument("--out", type=Path, default=MODEL_PATH)
    args = ap.parse_args(argv)
    if not args.halueval.exists():
        raise SystemExit(f"HaluEval file not found: {args.halueval}")
    lines = [json.loads(line) for line in args.halueval.read_text(encoding="utf-8").splitlines() if line.strip()]
    dev = [r for i, r in enumerate(lines) if i % TEST_EVERY != 0]
    short = VerifySettings().short_answer_words
    x, y = build(dev, short)
    model = fit(x, y)
    p = np.array([model.probability(dict(zip(FEATURES, row, strict=True))) for row in x])
    acc = float(((p >= 0.5) == (y == 1)).mean())
    model = ClaimModel(model.names, model.mean, model.scale, model.weights, model.bias,
                       {"trained_on": f"{args.halueval.name} records with index % {TEST_EVERY} != 0",
                        "examples": int(len(y)), "train_accuracy": round(acc, 4),
                        "script": "python -m bench.training.support_model.train"})
    args.out.write_text(model.to_json() + "\n", encoding="utf-8")
    print(f"trained on {len(dev)} records ({len(y)} claims), train accuracy {acc:.3f}; wrote {args.out}")
    for name, w in sorted(zip(FEATURES, model.weights, strict=True), key=lambda t: -abs(t[1])):
        print(f"  {name:10s} {w:+.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
