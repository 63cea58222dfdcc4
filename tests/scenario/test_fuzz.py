"""A few hundred seeded hostile inputs through `groundbot ask - --json` (bench/system/fuzz.py runs 10,000)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.system.fuzz import hostile_inputs, passed, run_fuzz


def test_inputs_are_seeded_and_one_line_each() -> None:
    a, b = hostile_inputs(200, seed=7), hostile_inputs(200, seed=7)
    assert a == b and a != hostile_inputs(200, seed=8)
    assert all(b"\n" not in line for _, line in a)
    assert {k for k, _ in a} == {"off_topic", "injected", "junk", "binary", "huge", "mixed_script", "blank", "control"}


@pytest.mark.slow
def test_hostile_batch_loses_nothing_and_answers_nothing_off_topic(tmp_path: Path) -> None:
    result = run_fuzz(240, seed=11, work=tmp_path)
    assert passed(result), {k: v for k, v in result.items() if k != "stderr_tail"} | {"stderr": result["stderr_tail"]}
    assert result["lines_out"] == result["turns_recorded"] == 240
