import pytest
from transitions import MachineError

from core.turn.conversation import Turn


def test_happy_path_trail() -> None:
    t = Turn("idle")
    for trig in ("ask", "retrieved", "gate_pass", "generated", "accept"):
        t.fire(trig)
    assert t.state == "replied"
    assert t.trail == ["idle", "retrieving", "gating", "generating", "verifying", "replied"]


def test_refusal_then_refinement() -> None:
    t = Turn("replied")
    for trig in ("ask", "retrieved", "gate_fail", "offer"):
        t.fire(trig)
    assert t.state == "awaiting_refinement"
    t.fire("pick")
    assert t.state == "retrieving"


def test_illegal_move_raises() -> None:
    t = Turn("idle")
    with pytest.raises(MachineError):
        t.fire("accept")


def test_unknown_stored_state_restarts_idle() -> None:
    assert Turn("generating").state == "idle"
