"""The generate and verify stages: an answer written from the chunks the gates kept, then
checked claim by claim and routed by its risk (sent, quoted verbatim, or held for a person)."""

from __future__ import annotations

import logging
from dataclasses import replace

from core import reasons
from core.catalogue import say
from core.ports import ClaimJudge, Generator
from core.reasons import Status
from core.settings import CoreSettings
from core.turn.context import TurnContext, Verified
from core.turn.conversation import Trigger
from core.turn.risk import Route, assess, route
from core.turn.stages import Outcome
from core.verify import verify_answer

log = logging.getLogger(__name__)


class GenerateStage:
    """An answer from the generator, or a refusal when it writes none or doubts it."""

    def __init__(self, generator: Generator, min_confidence: float) -> None:
        self.generator = generator
        self.min_confidence = min_confidence  # [verify] min_generation_confidence

    def __call__(self, ctx: TurnContext) -> Outcome:
        if ctx.gate is None:  # the state machine runs this stage only after the gates
            raise RuntimeError("generating before the gates ran")
        stated = ctx.resolution.stated if ctx.resolution else ctx.question  # the user's words, not selected ones
        try:
            gen = self.generator.generate(stated, ctx.gate.kept, ctx.question if ctx.question != stated else "")
        except Exception as exc:  # a generator bug or network error is a refusal, not a crash
            log.exception("generation failed")
            return Outcome(Trigger.REJECT, reasons.LLM_UNAVAILABLE, detail=f"the generator raised {type(exc).__name__}")
        if gen.error:
            return Outcome(Trigger.REJECT, reasons.LLM_UNAVAILABLE, detail=gen.error, found=gen)
        if not gen.text.strip():
            if gen.reason:  # the generator's own reason: its text, and the generator's numbers for `/why`
                return Outcome(Trigger.REJECT, gen.reason, detail=gen.detail, found=gen)
            return Outcome(Trigger.REJECT, reasons.INSUFFICIENT_CONTEXT, say("no_sentence_answers", ctx.language),
                           gen.detail, found=gen)
        if gen.confidence is not None and gen.confidence < self.min_confidence:
            return Outcome(Trigger.REJECT, reasons.LOW_GENERATION_CONFIDENCE, found=gen)
        return Outcome(Trigger.GENERATED, found=gen)


class VerifyStage:
    """The verifier's verdict on the answer, then its risk and route."""

    def __init__(self, settings: CoreSettings, judge: ClaimJudge | None) -> None:
        self.settings = settings
        self.judge = judge

    def __call__(self, ctx: TurnContext) -> Outcome:
        if ctx.gate is None or ctx.generation is None:  # the state machine runs this stage only after both
            raise RuntimeError("verifying before the gates ran and an answer was generated")
        s = self.settings
        judge, cfg = (self.judge, s.verify) if ctx.generation.llm_called else (  # an extractive quote
            None, replace(s.verify, require_citations=False, min_source_answer_probability=0.0))
        stated = ctx.resolution.stated if ctx.resolution else ctx.question
        v = verify_answer(ctx.generation.text, stated, ctx.gate.kept, cfg, judge, s.judge.min_claim_probability)
        if v.status == Status.REFUSE:
            return Outcome(Trigger.REJECT, v.reasons[0], found=Verified(v))
        risk = assess(v, ctx.gate, ctx.generation, v.claim_map, s.verify)
        way = route(risk.score, s.review)
        if way == Route.HOLD:
            return Outcome(Trigger.HOLD, reasons.NEEDS_REVIEW, found=Verified(v, risk, way))
        return Outcome(Trigger.ACCEPT, found=Verified(v, risk, way))
