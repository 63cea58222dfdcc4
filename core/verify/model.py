"""A small logistic model that turns claim features into a support probability.

Its weights live in core/verify/model.json, written by `python -m bench.training.support_model.train`
from the HaluEval dev split (records whose index % 5 != 0); the benchmark reports it on
the held-out records. No weights are downloaded: the file ships with the package.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from core.verify.features import FEATURES

MODEL_PATH = Path(__file__).with_name("model.json")


@dataclass(frozen=True)
class ClaimModel:
    names: tuple[str, ...]
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    weights: tuple[float, ...]
    bias: float
    meta: dict[str, Any]

    def probability(self, feats: dict[str, float]) -> float:
        z = self.bias
        for name, mu, sd, w in zip(self.names, self.mean, self.scale, self.weights, strict=True):
            z += w * (feats.get(name, 0.0) - mu) / sd
        return 1.0 / (1.0 + math.exp(-max(-40.0, min(40.0, z))))

    def to_json(self) -> str:
        return json.dumps({"names": self.names, "mean": self.mean, "scale": self.scale, "weights": self.weights,
                           "bias": self.bias, "meta": self.meta}, indent=1)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ClaimModel:
        return cls(tuple(d["names"]), tuple(d["mean"]), tuple(d["scale"]), tuple(d["weights"]), float(d["bias"]),
                   dict(d.get("meta", {})))


FALLBACK = ClaimModel(FEATURES, (0.0,) * len(FEATURES), (1.0,) * len(FEATURES),
                      tuple(6.0 if n == "sup2" else 0.0 for n in FEATURES), -4.0, {"fallback": True})


@lru_cache(maxsize=1)
def default_model() -> ClaimModel:
    """The shipped model; a transparent support-only fallback if the file is missing."""
    if not MODEL_PATH.exists():
        return FALLBACK
    return ClaimModel.from_dict(json.loads(MODEL_PATH.read_text(encoding="utf-8")))
