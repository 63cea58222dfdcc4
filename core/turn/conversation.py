"""The per-conversation state machine of one turn, driven by `transitions`.

Only resting states (idle, replied, refused, awaiting_refinement,
pending_review) are persisted between turns; a turn always starts from the
stored state, so any worker can take the next message of any conversation.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from transitions import Machine

from core.reasons import State


class Trigger(StrEnum):
    """What moves a turn from one state to the next."""

    ASK = "ask"
    PICK = "pick"
    RETRIEVED = "retrieved"
    GATE_PASS = "gate_pass"
    GATE_FAIL = "gate_fail"
    GENERATED = "generated"
    ACCEPT = "accept"
    REJECT = "reject"
    HOLD = "hold"
    OFFER = "offer"
    ABORT = "abort"


STATES = [str(s) for s in State]
RESTING = (State.IDLE, State.REPLIED, State.REFUSED, State.AWAITING_REFINEMENT, State.PENDING_REVIEW)
_RESTING = [str(s) for s in RESTING]

_MOVES: list[tuple[Trigger, Any, State]] = [
    (Trigger.ASK, _RESTING, State.RETRIEVING),
    (Trigger.PICK, _RESTING, State.RETRIEVING),
    (Trigger.RETRIEVED, State.RETRIEVING, State.GATING),
    (Trigger.GATE_PASS, State.GATING, State.GENERATING),
    (Trigger.GATE_FAIL, State.GATING, State.REFUSED),
    (Trigger.GENERATED, State.GENERATING, State.VERIFYING),
    (Trigger.ACCEPT, State.VERIFYING, State.REPLIED),
    (Trigger.REJECT, [State.VERIFYING, State.GENERATING], State.REFUSED),
    (Trigger.HOLD, State.VERIFYING, State.PENDING_REVIEW),
    (Trigger.OFFER, State.REFUSED, State.AWAITING_REFINEMENT),
    (Trigger.ABORT, "*", State.REFUSED),
]
# transitions reads an Enum state by its *name*: the machine is given the plain strings
TRANSITIONS: list[dict[str, Any]] = [
    {"trigger": str(t), "source": [str(x) for x in src] if isinstance(src, list) else str(src), "dest": str(dst)}
    for t, src, dst in _MOVES
]


class Turn:
    """The model object the machine drives; `trail` records the path for the record."""

    state: str

    def __init__(self, initial: str) -> None:
        start = str(initial) if initial in RESTING else str(State.IDLE)
        self.trail: list[str] = [start]
        self.machine = Machine(
            model=self,
            states=STATES,
            transitions=TRANSITIONS,  # type: ignore[arg-type]
            initial=start,
            auto_transitions=False,
            after_state_change="_remember",
        )

    def _remember(self) -> None:
        self.trail.append(self.state)

    def fire(self, trigger: str) -> None:
        """Run a trigger by name (raises MachineError on an illegal move)."""
        self.trigger(str(trigger))  # type: ignore[attr-defined]
