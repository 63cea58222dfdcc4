"""The decision record of one turn, built in one place from what the turn learned.

Every turn ends in exactly one record (answer or refusal, reasons, checks, every score,
sources, latency, index version and config hash): users see part of it, `/why` and `ask
--json` show all of it, and the transcript store keeps it.
"""

from __future__ import annotations

from core import reasons
from core.catalogue import explain, say
from core.messages import Decision, Source, Suggestion
from core.settings import RefusalSettings
from core.text.citations import cited
from core.text.normalize import normalize_text
from core.turn.context import TurnContext
from core.turn.conversation import State
from core.turn.risk import Route, template_answer
from core.turn.turnlog import current_turn_uid


def _answer(ctx: TurnContext, refused: bool) -> str:
    """What the user reads: the generated wording, or for a medium-risk answer the evidence
    quoted verbatim."""
    gen, v = ctx.generation, ctx.verification
    if refused or gen is None:
        return ""
    if ctx.route == Route.TEMPLATE and v is not None:
        return template_answer(v.claim_map, ctx.gate.kept if ctx.gate else [], ctx.language) or gen.text
    if v is not None and v.kept_answer:  # some claims were left out: the rest, and one line that says so
        n = len(v.removed_claims)
        note = say("pruned_one", ctx.language) if n == 1 else say("pruned_many", ctx.language, n=n)
        return f"{v.kept_answer}\n\n{note}"
    return gen.text


def _scores(ctx: TurnContext) -> dict[str, float | int | None]:
    v, g, gen = ctx.verification, ctx.gate, ctx.generation
    scores: dict[str, float | int | None] = dict(g.scores) if g else {}
    scores.update({
        "grounding_score": v.grounding_score if v else None,
        "citation_density": v.citation_density if v else None,
        "supported_claims": v.supported_claims if v else None,
        "total_claims": v.total_claims if v else None,
        "uncovered_claims": len(v.uncovered_claims) if v else None,
        "generation_confidence": gen.confidence if gen else None,
    })
    return scores


def _sources(ctx: TurnContext, answer: str, draft: bool = False) -> list[Source]:
    """The kept chunks the answer sent cites (none for a refusal): the claims' citations, or
    the quoted chunks of a template answer; a held draft's every citation (an admin who approves
    it sends it whole, left-out claims included, each with its source line)."""
    v, g = ctx.verification, ctx.gate
    numbers: set[int] = set()
    if v and answer and (draft or ctx.route == Route.TEMPLATE):
        numbers.update(cited(answer))
    elif v and answer:
        for c in v.claim_map:
            if c.supported or not v.removed_claims:  # a left-out claim's sources are not the answer's
                numbers.update(c.citations)
    kept = g.kept if g else []
    return [Source(n, h.doc_id, h.chunk_id, h.title, h.heading, h.source, h.url, h.similarity)
            for n, h in enumerate(kept, start=1) if n in numbers]


def _refusal_message(ctx: TurnContext, messages: dict[str, str]) -> str:
    """The fixed refusal message, or for a question with several readings the question back."""
    if ctx.reason == reasons.AMBIGUOUS_QUESTION:
        return say("ask_back", ctx.language)
    return messages.get(ctx.language) or messages.get("en", "")


def scope_decision(decision: Decision, scope: str | None, refusals: dict[str, str]) -> None:
    """The turn's knowledge scope in its record; a chat no scope serves is told so, and a
    scope's own refusal message (`refusals`) replaces the configured one."""
    decision.scope = scope
    if decision.refusal_reason == reasons.CHAT_NOT_SET_UP:
        decision.refusal_message = say("chat_not_set_up", decision.language)
    elif (decision.refused and decision.state != State.PENDING_REVIEW and scope in refusals
          and decision.refusal_reason != reasons.AMBIGUOUS_QUESTION):
        decision.refusal_message = refusals[scope or ""]


def build_decision(ctx: TurnContext, state: State, status: reasons.Status, suggestions: list[str], config_hash: str,
                   refusal: RefusalSettings, unprompted_probability: float = 1.0, verbatim: bool = False) -> Decision:
    """The record of a turn that rests in `state` (replied, refused, awaiting_refinement,
    pending_review) with verification status `status`. An answer is `unprompted` (fit to post where
    nobody asked groundbot) when the reader trusts its best chunk at `unprompted_probability`, when
    the question is asked `verbatim` as an FAQ question or a heading is written, or when no reader
    read (a knowledge base without one: its answers go out as before)."""
    held = state == State.PENDING_REVIEW
    refused = state in (State.REFUSED, State.AWAITING_REFINEMENT, State.PENDING_REVIEW)
    v, g, gen = ctx.verification, ctx.gate, ctx.generation
    all_reasons: list[reasons.Reason] = [ctx.reason] if ctx.reason else []
    if v:
        all_reasons.extend(r for r in v.reasons if r not in all_reasons)
    messages = refusal.review_messages if held else refusal.messages
    answer = _answer(ctx, refused)
    return Decision(
        question=ctx.asked,
        normalized_question=normalize_text(ctx.asked),
        retrieval_query=ctx.retrieval_query,
        answer=answer,
        refused=refused,
        refusal_reason=ctx.reason if refused and ctx.reason else "",
        refusal_message=_refusal_message(ctx, messages) if refused else "",
        explanation=ctx.explanation or (explain(ctx.reason, ctx.language) if refused and ctx.reason else ""),
        status=reasons.Status.REFUSE if refused and not held else status,
        state=state,
        reasons=all_reasons,
        checks_passed=(g.checks_passed if g else []) + (v.checks_passed if v else []),
        checks_failed=(g.checks_failed if g else []) + (v.checks_failed if v else []),
        scores=_scores(ctx),
        llm_called=bool(gen and gen.llm_called),
        sources=_sources(ctx, answer or (gen.text if gen and held else ""), draft=held and not answer),
        suggestions=[Suggestion(0, s) for s in suggestions],
        uncovered_claims=v.uncovered_claims if v else [],
        latency_ms={k: round(val, 3) for k, val in ctx.latency.items()},
        index_version=ctx.index_version,
        config_hash=config_hash,
        language=ctx.language,
        claim_map=list(v.claim_map) if v else [],
        draft=gen.text if gen and (held or ctx.route == Route.TEMPLATE or (v and v.kept_answer)) else "",
        removed_claims=list(v.removed_claims) if v and not refused else [],
        risk=ctx.risk.score if ctx.risk else None,
        risk_parts=dict(ctx.risk.parts) if ctx.risk else {},
        route=ctx.route,
        turn_uid=current_turn_uid(),  # the id the turn's log lines carry
        history=ctx.history,
        resolved_question=ctx.resolution.shown if ctx.resolution else "",
        resolution=ctx.resolution,
        detail=ctx.detail,
        unprompted=not refused and (verbatim or _confident(ctx, unprompted_probability)),
    )


def _confident(ctx: TurnContext, floor: float) -> bool:
    """The reader's best probability reaches `floor`; true when no reader read."""
    best = ctx.gate.scores.get("reader_best") if ctx.gate else None
    return best is None or float(best) >= floor
