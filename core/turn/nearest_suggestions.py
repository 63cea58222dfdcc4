"""In-scope question suggestions offered with a refusal."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from core.text.normalize import normalize_text

NEAR_DUPLICATE = 0.95  # cosine between two suggestions' vectors from which the second is not offered


def candidate_pool(limit: int) -> int:
    """How many nearest candidates a refusal reads to offer `limit` suggestions: enough that
    duplicates (one heading in many documents) and other-language candidates can be skipped."""
    return max(0, limit) * 10


def suggest(
    question: str,
    query_vector: np.ndarray,
    candidates: Sequence[tuple[str, np.ndarray]],
    floor: float,
    limit: int,
) -> list[str]:
    """Nearest FAQ questions / section headings above `floor`, best first, without the question
    itself and without near-duplicates (one heading written two ways in two documents)."""
    if not candidates or limit <= 0:
        return []
    matrix = np.stack([v for _, v in candidates])
    sims = matrix @ query_vector
    order = np.argsort(-sims, kind="stable")
    seen = {normalize_text(question)}
    kept: list[np.ndarray] = []
    out: list[str] = []
    for i in order:
        if sims[i] < floor:
            break
        text, vec = candidates[int(i)][0].strip(), matrix[int(i)]
        key = normalize_text(text)
        if not text or key in seen or any(float(vec @ v) >= NEAR_DUPLICATE for v in kept):
            continue
        seen.add(key)
        kept.append(vec)
        out.append(text)
        if len(out) >= limit:
            break
    return out
