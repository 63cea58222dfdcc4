"""One reader of the verifier's claim map, so its shape is known in one place.

The claim map is a list of rows (dicts today, typed objects tomorrow); everything outside the
verifier (risk, template answers, the review queue, /why) reads it through `claim_views`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ClaimView:
    """What the rest of groundbot needs of one verified claim."""

    claim: str
    citations: tuple[int, ...]
    support: float
    evidence: tuple[str, ...]
    evidence_chunks: tuple[int, ...]
    missing: tuple[str, ...]
    supported: bool
    judge: float | None = None  # the claim judge's probability, for a generated answer's claim


def _get(row: Any, names: Iterable[str], default: Any) -> Any:
    """The first of `names` the row has, as a dict key or an attribute."""
    for name in names:
        if isinstance(row, dict):
            if name in row:
                return row[name]
        elif hasattr(row, name):
            return getattr(row, name)
    return default


def claim_view(row: Any) -> ClaimView:
    return ClaimView(
        claim=str(_get(row, ("claim", "text"), "")),
        citations=tuple(int(c) for c in _get(row, ("citations",), ())),
        support=float(_get(row, ("support",), 0.0)),
        evidence=tuple(str(e) for e in _get(row, ("evidence",), ())),
        evidence_chunks=tuple(int(c) for c in _get(row, ("evidence_chunks",), ())),
        missing=tuple(str(m) for m in _get(row, ("missing", "missing_critical"), ())),
        supported=bool(_get(row, ("supported",), False)),
        judge=None if (j := _get(row, ("judge",), None)) is None else float(j),
    )


def claim_views(claim_map: Sequence[Any] | None) -> list[ClaimView]:
    return [claim_view(row) for row in claim_map or ()]


def numbers_and_names(text: str) -> list[str]:
    """The numbers and proper names in a claim, as the verifier sees them (they must appear
    verbatim in the evidence, and a wrong one is the commonest hallucination)."""
    from core.verify import critical_tokens

    return critical_tokens(text)
