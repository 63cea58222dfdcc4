"""The gate stage: the turn's gates (core/gate/gates.py) run in order on what retrieval found,
and the first refusal, in the asker's language, ends the turn before any generator is called."""

from __future__ import annotations

from core.catalogue import say
from core.gate.gates import gate_turn
from core.gate.view import GateTools, GateView
from core.turn.context import TurnContext
from core.turn.conversation import Trigger
from core.turn.stages import Outcome


class GateStage:
    """Every refusal before an answer is written; the reader's order and reading go on with the turn."""

    def __init__(self, tools: GateTools) -> None:
        self.tools = tools

    def __call__(self, ctx: TurnContext) -> Outcome:
        retrieved = ctx.retrieved
        if retrieved is None or retrieved.resolution is None:  # the state machine runs this stage only after retrieval
            raise RuntimeError("gating before anything was retrieved")
        view = GateView(ctx.asked, retrieved, retrieved.resolution, ctx.msg.scope, self.tools)
        result = gate_turn(view)
        timings = {"read": view.read_ms} if view.read_ms is not None else {}
        verdict = result.refusal
        if verdict is None:
            return Outcome(Trigger.GATE_PASS, found=result, timings=timings)
        explanation = say(verdict.key, ctx.language, **verdict.fields) if verdict.key else ""
        return Outcome(Trigger.GATE_FAIL, verdict.reason, explanation, verdict.detail, found=result, timings=timings)
