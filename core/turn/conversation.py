"""The per-conversation state machine of one turn, driven by `transitions`.

Only resting states (idle, replied, refused, awaiting_refinement,
pending_review) are persisted between turns; a turn always starts from the
stored state, so any worker can take the next message of any conversation.
"""

from __future__ import annotations

from dataclasses import dataclass
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
ANY = "*"  # a move from every state


@dataclass(frozen=True)
class Step:
    """A working state of a turn: the stage it runs (by name, also its latency key) and where each
    trigger that stage returns leads."""

    state: State
    stage: str
    moves: tuple[tuple[Trigger, State], ...]


# The order of a turn, written once: the pipeline's stage table, the machine's transitions and
# docs/architecture.md's diagram (tests/layout/test_turn_diagram.py) all follow from TURN and
# the moves around it.
TURN: tuple[Step, ...] = (
    Step(State.RETRIEVING, "retrieve", ((Trigger.RETRIEVED, State.GATING),)),
    Step(State.GATING, "gate", ((Trigger.GATE_PASS, State.GENERATING), (Trigger.GATE_FAIL, State.REFUSED))),
    Step(State.GENERATING, "generate", ((Trigger.GENERATED, State.VERIFYING), (Trigger.REJECT, State.REFUSED))),
    Step(State.VERIFYING, "verify", ((Trigger.ACCEPT, State.REPLIED), (Trigger.REJECT, State.REFUSED),
                                     (Trigger.HOLD, State.PENDING_REVIEW))),
)
# the moves no stage returns: a message (or a picked suggestion) starts a turn from any resting
# state; a refusal that offers questions waits for one; a turn that cannot go on (a message that
# cannot be asked, an index that cannot be searched, a bug) is refused from wherever it is
AROUND: tuple[tuple[Trigger, tuple[State, ...] | str, State], ...] = (
    (Trigger.ASK, RESTING, TURN[0].state),
    (Trigger.PICK, RESTING, TURN[0].state),
    (Trigger.OFFER, (State.REFUSED,), State.AWAITING_REFINEMENT),
    (Trigger.ABORT, ANY, State.REFUSED),
)


def moves() -> list[tuple[Trigger, tuple[State, ...] | str, State]]:
    """Every move of a turn: (trigger, the states it leaves, or ANY; the state it leads to)."""
    return [*AROUND[:2], *((t, (step.state,), dest) for step in TURN for t, dest in step.moves), *AROUND[2:]]


# transitions reads an Enum state by its *name*: the machine is given the plain strings
TRANSITIONS: list[dict[str, Any]] = [
    {"trigger": str(t), "source": src if isinstance(src, str) else [str(x) for x in src], "dest": str(dst)}
    for t, src, dst in moves()
]


def diagram() -> str:
    """The turn as docs/architecture.md draws it: one line per move, grouped by the state left,
    with the stage each working state runs."""
    stages = {step.state: step.stage for step in TURN}
    groups: dict[str, list[tuple[Trigger, State]]] = {}
    for trigger, src, dest in moves():
        left = "any state" if isinstance(src, str) else " | ".join(
            f"{s} [{stages[s]}]" if s in stages else str(s) for s in src)
        groups.setdefault(left, []).append((trigger, dest))
    lines: list[str] = []
    for left, out in groups.items():
        merged: dict[State, list[str]] = {}
        for trigger, dest in out:
            merged.setdefault(dest, []).append(str(trigger))
        for i, (dest, triggers) in enumerate(merged.items()):
            lines.append(f"{left if i == 0 else ' ' * len(left)} --{' | '.join(triggers)}--> {dest}")
    return "\n".join(lines)


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
