"""The stage loop of a turn, written once: the conversation's state machine names the state, the
state's stage runs and says how the turn moves on, until the turn rests. The pipeline runs it for
every message; the suggestion offers run it to learn whether a suggestion would be answered,
stopping before a language model would be called."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from core.turn.conversation import State, Trigger, Turn
from core.turn.record import TurnContext


@dataclass(frozen=True)
class Outcome:
    """What a stage decided: the trigger that moves the turn on, and why (for a refusal): the
    explanation its asker reads, in the question's language ("" = the reason code's own,
    core/catalogue: `explain`), and the detail `/why` and the record add (numbers, internals)."""

    trigger: Trigger
    reason: str = ""
    explanation: str = ""
    detail: str = ""


Stage = Callable[[TurnContext], Outcome]
# the stage each working state runs, with its latency key; resting states run none
Stages = Mapping[str, tuple[str, Stage]]


def run_stages(stages: Stages, ctx: TurnContext, turn: Turn, clock: Callable[[], float],
               stop_at: State | None = None) -> None:
    """Run the current state's stage until the turn rests in a state with no stage (or reaches
    `stop_at`), each stage's time in `ctx.latency` and its refusal reason in `ctx`."""
    while turn.state in stages and turn.state != stop_at:
        name, stage = stages[turn.state]
        t0 = clock()
        try:
            outcome = stage(ctx)
        finally:
            ctx.latency[name] = round((clock() - t0) * 1000, 3)
        if outcome.reason:
            ctx.reason = outcome.reason
        if outcome.explanation:
            ctx.explanation = outcome.explanation
        if outcome.detail:
            ctx.detail = outcome.detail
        turn.fire(outcome.trigger)
