"""One turn, end to end: retrieve -> gate -> generate -> verify -> reply or refuse.

Every stage shares one shape (it reads and extends a `TurnContext`), and every
turn ends in exactly one decision record written to the transcript store.
"""

from __future__ import annotations

import logging
import time
import unicodedata
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from core import reasons
from core.condense import condense
from core.conversation import Turn
from core.gates import GateResult, run_gates
from core.language import language_of, prefer_language
from core.messages import Decision, Generation, Hit, Incoming, Source, Suggestion, Verification
from core.normalize import normalize_text
from core.ports import ChunkIndex, ConversationState, Embedder, Generator, TranscriptStore
from core.settings import CoreSettings
from core.suggest import suggest
from core.verify import verify_answer

log = logging.getLogger(__name__)


@dataclass
class TurnContext:
    """Everything a turn has learned so far; stages add to it."""

    msg: Incoming
    question: str
    language: str
    conversation: ConversationState | None = None
    retrieval_query: str = ""
    query_vector: np.ndarray | None = None
    hits: list[Hit] = field(default_factory=list)
    gate: GateResult | None = None
    generation: Generation | None = None
    verification: Verification | None = None
    reason: str = ""
    explanation: str = ""
    latency: dict[str, float] = field(default_factory=dict)
    index_version: str = ""
    history: str = ""  # "loaded", "none" or "unavailable"


def clean_input(text: str) -> str:
    """Drop control characters (binary junk) but keep every script and emoji."""
    text = unicodedata.normalize("NFC", text)
    return "".join(ch for ch in text if ch in "\n\t" or unicodedata.category(ch)[0] != "C").strip()


class Pipeline:
    """The grounded-answer pipeline; adapters call `handle` once per user message."""

    def __init__(
        self,
        settings: CoreSettings,
        embedder: Embedder,
        index: ChunkIndex,
        generator: Generator,
        store: TranscriptStore,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.settings = settings
        self.embedder = embedder
        self.index = index
        self.generator = generator
        self.store = store
        self.clock = clock
        self.config_hash = settings.config_hash() + ":" + generator.name + ":" + embedder.name

    # -- input -----------------------------------------------------------------
    def _validate(self, msg: Incoming) -> tuple[str, str]:
        """Return (question, rejection explanation)."""
        if msg.rejection:
            return clean_input(msg.text)[: self.settings.retrieval.max_question_chars], msg.rejection
        text = msg.text
        if msg.suggestion_id is not None:
            picked = self.store.suggestion_text(msg.suggestion_id)
            if picked is None:
                return "", "That suggestion is no longer available; please type your question."
            text = picked
        raw_len = len(text)
        question = clean_input(text)
        limit = self.settings.retrieval.max_question_chars
        if raw_len and len(question) < raw_len * 0.5 and raw_len > 8:
            return question[:limit], "The message looks like binary data, not a question."
        if not question:
            return "", "The message is empty; please type a question."
        if len(question) > limit:
            return question[:limit], f"The message is too long ({len(question)} characters; the limit is {limit})."
        if not normalize_text(question).strip("?!.,;:-_ ") or not any(ch.isalnum() for ch in question):
            return question, "The message has no words to search for; please type a question."
        return question, ""

    # -- stages ----------------------------------------------------------------
    def _retrieve(self, ctx: TurnContext) -> None:
        """Search with the question; a possible follow-up is also searched condensed with
        the earlier questions, and whichever finds the closer evidence wins."""
        cfg = self.settings.retrieval
        history = ctx.conversation.history if ctx.conversation else []
        ctx.index_version = self.index.version()
        queries = [ctx.question]
        condensed = condense(ctx.question, history, cfg.history_turns)
        if condensed != ctx.question:
            queries.append(condensed)
        norms = [normalize_text(q) for q in queries]
        vectors = self.embedder.embed_queries(norms)
        best: tuple[float, int, list[Hit]] | None = None
        for i, (norm, vec) in enumerate(zip(norms, vectors, strict=True)):
            hits = self.index.search(norm, vec, cfg.top_k)
            top1 = max((h.similarity for h in hits), default=0.0)
            if best is None or top1 > best[0]:
                best = (top1, i, hits)
        assert best is not None
        ctx.retrieval_query = queries[best[1]]
        ctx.query_vector = vectors[best[1]]
        # a mixed-language KB answers from sources in the question's language where there are any
        ctx.hits = prefer_language(best[2], ctx.language, lambda h: h.text)

    def _gate(self, ctx: TurnContext) -> bool:
        ctx.gate = run_gates(ctx.retrieval_query, ctx.hits, self.settings.gates)
        if not ctx.gate.passed:
            ctx.reason = ctx.gate.reason
        return ctx.gate.passed

    def _generate(self, ctx: TurnContext) -> bool:
        assert ctx.gate is not None
        ctx.generation = self.generator.generate(ctx.question, ctx.gate.kept)
        gen = ctx.generation
        if gen.error:
            ctx.reason = reasons.LLM_UNAVAILABLE
            ctx.explanation = f"{reasons.EXPLANATIONS[reasons.LLM_UNAVAILABLE]} ({gen.error})"
            return False
        if not gen.text.strip():
            ctx.reason = gen.reason or reasons.INSUFFICIENT_CONTEXT
            ctx.explanation = gen.explanation or "No sentence in the matching sources answers the question."
            return False
        floor = self.settings.verify.min_generation_confidence
        if gen.confidence is not None and gen.confidence < floor:
            ctx.reason = reasons.LOW_GENERATION_CONFIDENCE
            return False
        return True

    def _verify(self, ctx: TurnContext) -> str:
        assert ctx.gate is not None and ctx.generation is not None
        ctx.verification = verify_answer(
            ctx.generation.text, ctx.question, ctx.gate.kept, self.settings.verify
        )
        if ctx.verification.status == "REFUSE":
            ctx.reason = ctx.verification.reasons[0]
        return ctx.verification.status

    # -- the turn --------------------------------------------------------------
    def handle(self, msg: Incoming) -> Decision:
        """Answer or refuse one message; always returns a recorded decision, never raises."""
        t_start = self.clock()
        try:
            return self._handle(msg, t_start)
        except Exception as exc:  # last line of defence: the user gets a refusal, the turn is recorded
            log.exception("turn failed")
            ctx = TurnContext(msg=msg, question=clean_input(msg.text)[: self.settings.retrieval.max_question_chars],
                              language=language_of(msg.text))
            ctx.reason = reasons.NO_MATCHING_SOURCE
            ctx.explanation = f"groundbot could not process the question ({type(exc).__name__}); it was recorded."
            turn = Turn("idle")
            turn.fire("abort")
            ctx.latency["total"] = (self.clock() - t_start) * 1000
            decision = self._decision(ctx, turn, "REFUSE", with_suggestions=False)
            self._record(msg, decision, turn)
            return decision

    def _handle(self, msg: Incoming, t_start: float) -> Decision:
        question, rejection = self._validate(msg)
        ctx = TurnContext(msg=msg, question=question, language=language_of(question))
        turn = Turn("idle")
        try:  # the store retries a busy database within its budget; past it, answer without history
            ctx.conversation = self.store.load_conversation(msg.key, self.settings.retrieval.history_turns)
            turn = Turn(ctx.conversation.state)
            ctx.history = "loaded" if ctx.conversation.history else "none"
        except Exception as exc:
            ctx.history = "unavailable"
            log.warning("conversation %s: history unavailable, answering without it (%s)", msg.key.as_str(),
                        str(exc).splitlines()[0][:200])
        turn.fire("pick" if msg.suggestion_id is not None else "ask")
        final = self._run(ctx, turn, rejection)
        ctx.latency["total"] = (self.clock() - t_start) * 1000
        decision = self._decision(ctx, turn, final)
        self._record(msg, decision, turn)
        return decision

    def _timed(self, ctx: TurnContext, stage: str, fn: Callable[[TurnContext], object]) -> object:
        t0 = self.clock()
        try:
            return fn(ctx)
        finally:
            ctx.latency[stage] = round((self.clock() - t0) * 1000, 3)

    def _run(self, ctx: TurnContext, turn: Turn, rejection: str) -> str:
        """Drive the machine through the stages; returns the final status."""
        if rejection:
            ctx.reason, ctx.explanation = reasons.INPUT_REJECTED, rejection
            turn.fire("abort")
            return "REFUSE"
        try:
            self._timed(ctx, "retrieve", self._retrieve)
        except Exception as exc:
            log.exception("retrieval failed")
            ctx.reason = reasons.NO_MATCHING_SOURCE
            ctx.explanation = f"The knowledge base could not be searched ({type(exc).__name__})."
            turn.fire("abort")
            return "REFUSE"
        turn.fire("retrieved")
        if not self._timed(ctx, "gate", self._gate):
            turn.fire("gate_fail")
            return "REFUSE"
        turn.fire("gate_pass")
        try:
            ok = self._timed(ctx, "generate", self._generate)
        except Exception as exc:  # a generator bug or network error is a refusal, not a crash
            log.exception("generation failed")
            ctx.reason = reasons.LLM_UNAVAILABLE
            ctx.explanation = f"{reasons.EXPLANATIONS[reasons.LLM_UNAVAILABLE]} ({type(exc).__name__})"
            ok = False
        if not ok:
            turn.fire("reject")
            return "REFUSE"
        turn.fire("generated")
        status = str(self._timed(ctx, "verify", self._verify))
        if status == "REFUSE":
            turn.fire("reject")
        elif status == "WARN" and self.settings.verify.hold_warn_for_review:
            ctx.reason = reasons.NEEDS_REVIEW
            turn.fire("hold")
        else:
            turn.fire("accept")
        return status

    def _suggestions(self, ctx: TurnContext) -> list[str]:
        cfg = self.settings.refusal
        vec = ctx.query_vector
        if vec is None or ctx.reason == reasons.INPUT_REJECTED:
            if not ctx.question:
                return []
            try:
                vec = self.embedder.embed_queries([normalize_text(ctx.question)])[0]
            except Exception:
                return []
        try:
            candidates = self.index.suggestion_candidates()
        except Exception:
            return []
        candidates = prefer_language(candidates, ctx.language, lambda c: c[0])
        return suggest(ctx.question, vec, candidates, cfg.suggestion_floor, cfg.max_suggestions)

    def _decision(self, ctx: TurnContext, turn: Turn, status: str, with_suggestions: bool = True) -> Decision:
        cfg = self.settings
        refused = turn.state in ("refused", "pending_review")
        lang = ctx.language
        suggestions: list[str] = []
        if turn.state == "refused" and with_suggestions:
            suggestions = self._suggestions(ctx)
            if suggestions:
                turn.fire("offer")
        v, g, gen = ctx.verification, ctx.gate, ctx.generation
        scores: dict[str, float | int | None] = dict(g.scores) if g else {}
        scores.update(
            {
                "grounding_score": v.grounding_score if v else None,
                "citation_density": v.citation_density if v else None,
                "supported_claims": v.supported_claims if v else None,
                "total_claims": v.total_claims if v else None,
                "uncovered_claims": len(v.uncovered_claims) if v else None,
                "generation_confidence": gen.confidence if gen else None,
                "answer_probability": gen.answer_probability if gen else None,
            }
        )
        cited: set[int] = set()
        if v and not refused:
            for row in v.claim_map:
                cited.update(row["citations"])
        kept = g.kept if g else []
        sources = [
            Source(n, h.doc_id, h.chunk_id, h.title, h.heading, h.source, h.url, h.similarity)
            for n, h in enumerate(kept, start=1)
            if n in cited
        ]
        all_reasons: list[str] = []
        if ctx.reason:
            all_reasons.append(ctx.reason)
        if v:
            all_reasons.extend(r for r in v.reasons if r not in all_reasons)
        refusal_msgs = cfg.refusal.review_messages if turn.state == "pending_review" else cfg.refusal.messages
        refusal_message = (refusal_msgs.get(lang) or refusal_msgs.get("en", "")) if refused else ""
        explanation = ctx.explanation or (reasons.EXPLANATIONS.get(ctx.reason, "") if refused else "")
        checks_passed = (g.checks_passed if g else []) + (v.checks_passed if v else [])
        checks_failed = (g.checks_failed if g else []) + (v.checks_failed if v else [])
        answer = gen.text if gen and not refused else ""
        return Decision(
            question=ctx.question,
            normalized_question=normalize_text(ctx.question),
            retrieval_query=ctx.retrieval_query,
            answer=answer,
            refused=refused,
            refusal_reason=ctx.reason if refused else "",
            refusal_message=refusal_message,
            explanation=explanation,
            status="REFUSE" if turn.state == "refused" else status,
            state=turn.state,
            reasons=all_reasons,
            checks_passed=checks_passed,
            checks_failed=checks_failed,
            scores=scores,
            llm_called=bool(gen and gen.llm_called),
            sources=sources,
            suggestions=[Suggestion(0, s) for s in suggestions],
            uncovered_claims=v.uncovered_claims if v else [],
            latency_ms={k: round(val, 3) for k, val in ctx.latency.items()},
            index_version=ctx.index_version,
            config_hash=self.config_hash,
            language=lang,
            claim_map=v.claim_map if v else [],
            draft=gen.text if gen and turn.state == "pending_review" else "",
            turn_uid=uuid.uuid4().hex,
            history=ctx.history,
        )

    def _record(self, msg: Incoming, decision: Decision, turn: Turn) -> None:
        """Persist the decision (the store retries, and spools what the database cannot take);
        `decision.recorded` says where it went, and stays empty only if it went nowhere."""
        try:
            turn_id, stored = self.store.record_turn(msg.key, msg.user_id, msg.team_id, decision, turn.state)
        except Exception as exc:
            log.error("turn %s was NOT recorded: %s", decision.turn_uid, str(exc).splitlines()[0][:300])
            decision.suggestions = []
            return
        decision.turn_id = turn_id
        decision.suggestions = stored
        decision.recorded = "database" if turn_id is not None else "spool"
