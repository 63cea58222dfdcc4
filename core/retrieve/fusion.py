"""Reciprocal-rank fusion, written once: the index fuses its vector and full-text legs with it
(storage/index/fusion.py), and a turn fuses the searches of its several readings with it
(core/retrieve/search.py). A place near the top of any ranking counts more than agreeing scores
of different scales would."""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from typing import TypeVar

K = TypeVar("K", bound=Hashable)


def reciprocal_ranks(rankings: Iterable[Iterable[K]], rrf_k: int) -> dict[K, float]:
    """Each key's score over the rankings, 1 / (rrf_k + place) summed, places counted from 1; a
    key a ranking lists twice counts at its first place there (an FAQ's question and answer rows)."""
    score: dict[K, float] = {}
    for ranking in rankings:
        seen: set[K] = set()
        for key in ranking:
            if key in seen:
                continue
            seen.add(key)
            score[key] = score.get(key, 0.0) + 1.0 / (rrf_k + len(seen))
    return score
