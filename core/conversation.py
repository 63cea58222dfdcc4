"""The per-conversation state machine of one turn, driven by `transitions`.

Only resting states (idle, replied, refused, awaiting_refinement,
pending_review) are persisted between turns; a turn always starts from the
stored state, so any worker can take the next message of any conversation.
"""

from __future__ import annotations

from typing import Any

from transitions import Machine

STATES = [
    "idle",
    "retrieving",
    "gating",
    "generating",
    "verifying",
    "replied",
    "refused",
    "awaiting_refinement",
    "pending_review",
]
RESTING = ("idle", "replied", "refused", "awaiting_refinement", "pending_review")

TRANSITIONS: list[dict[str, Any]] = [
    {"trigger": "ask", "source": list(RESTING), "dest": "retrieving"},
    {"trigger": "pick", "source": list(RESTING), "dest": "retrieving"},
    {"trigger": "retrieved", "source": "retrieving", "dest": "gating"},
    {"trigger": "gate_pass", "source": "gating", "dest": "generating"},
    {"trigger": "gate_fail", "source": "gating", "dest": "refused"},
    {"trigger": "generated", "source": "generating", "dest": "verifying"},
    {"trigger": "accept", "source": "verifying", "dest": "replied"},
    {"trigger": "reject", "source": ["verifying", "generating"], "dest": "refused"},
    {"trigger": "hold", "source": "verifying", "dest": "pending_review"},
    {"trigger": "offer", "source": "refused", "dest": "awaiting_refinement"},
    {"trigger": "abort", "source": "*", "dest": "refused"},
]


class Turn:
    """The model object the machine drives; `trail` records the path for the record."""

    state: str

    def __init__(self, initial: str) -> None:
        start = initial if initial in RESTING else "idle"
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
        self.trigger(trigger)  # type: ignore[attr-defined]
