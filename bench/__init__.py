"""Benchmarks and evaluations on real data, and the training of the models groundbot ships; not
run by pytest. Packages by role: grounding/ (the grounding benchmark and its suites), system/
(latency, scale, load, fuzz), training/ (one folder per shipped model), tuning/ (sweeps)."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]  # the project root
RESULTS = ROOT / "bench" / "results"
