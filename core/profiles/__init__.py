"""Similarity thresholds belong to the embedder: one calibrated profile per embedder.

Cosine similarities live on an embedder's own scale: all-MiniLM-L6-v2 scores an unrelated
question far below a related one, while multilingual-e5 scores almost any question high, in a
narrow band, against almost any passage. A gate tuned for one never fires for the other. So every
threshold on a similarity (gates, quote floor, FAQ match, suggestion floor) comes from the profile
of the embedder that built the index (`core/profiles/<embedder>.json`, beside this module, written by
`groundbot calibrate --write-profile`), and config.toml only overrides the keys it sets explicitly.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from core.settings import CoreSettings

PROFILE_DIR = Path(__file__).resolve().parent  # the profiles lie beside this module

# section of CoreSettings -> the similarity thresholds in it that a profile sets
THRESHOLD_KEYS: dict[str, tuple[str, ...]] = {
    "gates": ("min_top1_similarity", "min_mean_confidence", "offtopic_floor", "chunk_floor"),
    "extractive": ("faq_min_similarity", "heading_min_similarity", "heading_paraphrase_similarity", "min_quote_similarity"),
    "refusal": ("suggestion_floor",),
}


@dataclass(frozen=True)
class Profile:
    """Thresholds for one embedder, and where they were measured."""

    embedder: str
    values: dict[str, dict[str, float]]
    calibrated_on: str = ""

    def to_json(self) -> str:
        return json.dumps({"embedder": self.embedder, "calibrated_on": self.calibrated_on, **self.values},
                          indent=2, ensure_ascii=False) + "\n"


def parse_profile(data: Mapping[str, Any], where: str) -> Profile:
    """A profile from its JSON object; unknown sections or keys are errors naming `where`."""
    values: dict[str, dict[str, float]] = {}
    for section, keys in data.items():
        if section in ("embedder", "calibrated_on"):
            continue
        allowed = THRESHOLD_KEYS.get(section)
        if allowed is None:
            raise ValueError(f"{where}: unknown section {section!r} (expected {', '.join(THRESHOLD_KEYS)})")
        for key, value in dict(keys).items():
            if key not in allowed:
                raise ValueError(f"{where}: unknown threshold [{section}] {key} (expected {', '.join(allowed)})")
            values.setdefault(section, {})[key] = float(value)
    return Profile(str(data.get("embedder", "")), values, str(data.get("calibrated_on", "")))


def load_profile(embedder: str, directory: Path = PROFILE_DIR) -> Profile | None:
    """The shipped profile of `embedder`, or None when there is none (config values then apply)."""
    path = directory / f"{embedder}.json"
    if not path.is_file():
        return None
    return parse_profile(json.loads(path.read_text(encoding="utf-8")), str(path))


def apply_profile(settings: CoreSettings, profile: Profile | None,
                  explicit: Mapping[str, Mapping[str, Any]] | None = None) -> CoreSettings:
    """Settings with the profile's thresholds, except the keys config.toml set explicitly."""
    if profile is None:
        return settings
    explicit = explicit or {}
    changed: dict[str, Any] = {}
    for section, values in profile.values.items():
        keep = explicit.get(section, {})
        chosen = {k: v for k, v in values.items() if k not in keep}
        if chosen:
            changed[section] = replace(getattr(settings, section), **chosen)
    return replace(settings, **changed)
