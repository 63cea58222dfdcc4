"""The stage loop of a turn, written once: the conversation's state machine names the state, the
state's stage runs and says how the turn moves on, until the turn rests. Which stage a state runs
is core/turn/conversation.py's `TURN`. The pipeline runs the loop for every message; the
suggestion offers run it to learn whether a suggestion would be answered, stopping before a
language model would be called."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from core.reasons import Reason
from core.turn.context import Found, TurnContext
from core.turn.conversation import TURN, State, Trigger, Turn


@dataclass(frozen=True)
class Outcome:
    """What a stage decided: the trigger that moves the turn on, and why (for a refusal): the
    explanation its asker reads, in the question's language ("" = the reason code's own,
    core/catalogue: `explain`), and the detail `/why` and the record add (numbers, internals);
    with the stage's typed result (`found`) and the time its named steps took."""

    trigger: Trigger
    reason: Reason | None = None
    explanation: str = ""
    detail: str = ""
    found: Found | None = None
    timings: Mapping[str, float] = field(default_factory=dict)


Stage = Callable[[TurnContext], Outcome]  # reads the turn so far, writes nothing to it


class Stages:
    """The stages of a turn, each in the working state `TURN` gives it, and the loop that runs them."""

    def __init__(self, by_name: Mapping[str, Stage], clock: Callable[[], float]) -> None:
        missing = [step.stage for step in TURN if step.stage not in by_name]
        if missing:
            raise ValueError(f"no stage named {', '.join(missing)}")
        self.table: dict[str, tuple[str, Stage]] = {step.state: (step.stage, by_name[step.stage]) for step in TURN}
        self.clock = clock

    def run(self, ctx: TurnContext, turn: Turn, stop_at: State | None = None) -> None:
        """Run the current state's stage until the turn rests in a state with no stage (or reaches
        `stop_at`), each stage's result, time and refusal reason filed in `ctx`."""
        while turn.state in self.table and turn.state != stop_at:
            name, stage = self.table[turn.state]
            t0 = self.clock()
            try:
                outcome = stage(ctx)
                ctx.take(outcome.found)
                ctx.latency.update(outcome.timings)
            finally:
                ctx.latency[name] = round((self.clock() - t0) * 1000, 3)
            if outcome.reason:
                ctx.reason = outcome.reason
            if outcome.explanation:
                ctx.explanation = outcome.explanation
            if outcome.detail:
                ctx.detail = outcome.detail
            turn.fire(outcome.trigger)
