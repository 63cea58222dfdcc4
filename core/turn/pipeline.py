"""One turn, end to end: retrieve -> gate -> generate -> verify -> reply or refuse.

The state machine drives the turn: every working state has one stage, every stage has one
shape (it reads and extends the `TurnContext` and returns an `Outcome`: the trigger that moves
the machine on, and why), and the turn loops until the machine rests. Every turn ends in
exactly one decision record (core/turn/record.py) written to the transcript store.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

from core import reasons
from core.gate.checks import run_gates
from core.gate.mentions import KnownWords, not_mentioned, weakly_answered
from core.gate.reading import Reading, read
from core.messages import NOT_SET_UP, ConversationKey, Decision, Hit, Incoming
from core.ports import ChunkIndex, ClaimJudge, ConversationTurn, Embedder, Generator, PassageReader, TranscriptStore
from core.reasons import Status
from core.retrieve.condense import condense
from core.settings import CoreSettings, Mode, for_mode
from core.text.language import language_of, prefer_language
from core.text.normalize import clean_input, normalize_text
from core.turn.conversation import State, Trigger, Turn
from core.turn.record import TurnContext, build_decision, scope_decision
from core.turn.risk import Route, assess, route
from core.turn.suggest import candidate_pool, suggest
from core.turn.turnlog import turn_context
from core.turn.verdicts import Verdicts
from core.verify import verify_answer
from core.verify.claim_views import claim_views

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Outcome:
    """What a stage decided: the trigger that moves the turn on, and why (for a refusal)."""

    trigger: Trigger
    reason: str = ""
    explanation: str = ""


Stage = Callable[[TurnContext], Outcome]


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
        claim_judge: ClaimJudge | None = None,
        reader: PassageReader | None = None,
        scope_refusals: Mapping[str, str] | None = None,
    ) -> None:
        self.config_hash = settings.config_hash() + ":" + generator.name + ":" + embedder.name
        self.settings = settings = for_mode(settings, generator.mode)  # what every stage reads, resolved once
        self.reader = reader if settings.reader.enabled else None
        self.scope_refusals = dict(scope_refusals or {})  # a knowledge scope's own refusal message
        self.claim_judge = claim_judge if settings.judge.claims else None
        self.embedder = embedder
        self.index = index
        self.generator = generator
        self.mentions = settings.extractive.mentioned_words
        self.known_words = KnownWords(index)  # core/gate/mentions.py: the index's words, looked up once per version
        self.store = store
        self.clock = clock
        self._verdicts = Verdicts()  # suggestion -> answered now, per knowledge scope and index version
        self._dry_runs = 0  # suggestions decided by running their stages (not read from the index)
        # the stage each working state runs (its latency key, the stage); resting states run none
        self.stages: dict[str, tuple[str, Stage]] = {
            State.RETRIEVING: ("retrieve", self._retrieve),
            State.GATING: ("gate", self._gate),
            State.GENERATING: ("generate", self._generate),
            State.VERIFYING: ("verify", self._verify),
        }

    # -- input -----------------------------------------------------------------
    def _validate(self, msg: Incoming) -> tuple[str, str]:
        """Return (question, rejection explanation)."""
        if msg.scope == NOT_SET_UP:  # nothing of the knowledge base is read for a chat no scope serves
            return clean_input(msg.text)[: self.settings.retrieval.max_question_chars], reasons.EXPLANATIONS[
                reasons.CHAT_NOT_SET_UP]
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

    # -- stages: each reads the turn context and says how the turn moves on ------
    def _retrieve(self, ctx: TurnContext) -> Outcome:
        """Search with the question; a possible follow-up is also searched condensed with
        the earlier questions, and whichever finds the closer evidence wins."""
        cfg = self.settings.retrieval
        history = ctx.conversation.history if ctx.conversation else []
        try:
            ctx.index_version = self.index.version()
            queries = list(dict.fromkeys([ctx.question, condense(ctx.question, history, cfg.history_turns)]))
            norms = [normalize_text(q) for q in queries]
            vectors = self.embedder.embed_queries(norms)
            best: tuple[float, int, list[Hit]] | None = None
            for i, (norm, vec) in enumerate(zip(norms, vectors, strict=True)):
                hits = self.index.search(norm, vec, cfg.top_k, scope=ctx.msg.scope)
                top1 = max((h.similarity for h in hits), default=0.0)
                if best is None or top1 > best[0]:
                    best = (top1, i, hits)
        except Exception as exc:
            log.exception("retrieval failed")
            return Outcome(Trigger.ABORT, reasons.NO_MATCHING_SOURCE,
                           f"The knowledge base could not be searched ({type(exc).__name__}).")
        assert best is not None
        ctx.retrieval_query = queries[best[1]]
        ctx.query_vector = vectors[best[1]]
        # a mixed-language KB answers from sources in the question's language where there are any
        ctx.hits = prefer_language(best[2], ctx.language, lambda h: h.text)
        return Outcome(Trigger.RETRIEVED)

    def _gate(self, ctx: TurnContext) -> Outcome:
        """The similarity gates, and with a passage reader its verdict: the reader reorders the
        chunks (the gates and the generator read its order), the similarity gates only keep out
        what is plainly off-topic, and whether the sources answer is the reader's call."""
        gates = self.settings.gates
        reading = self._read(ctx)
        if reading is not None:
            ctx.hits = reading.hits
            r = self.settings.reader
            gates = replace(gates, min_top1_similarity=min(gates.min_top1_similarity, r.min_top1_similarity),
                            min_mean_confidence=min(gates.min_mean_confidence, r.min_mean_confidence))
        ctx.gate = g = run_gates(ctx.retrieval_query, ctx.hits, gates)
        if not g.passed:
            return Outcome(Trigger.GATE_FAIL, g.reason)
        if reading is None:
            return Outcome(Trigger.GATE_PASS)
        g.scores.update(reader_best=round(reading.best, 4), reader_chunks_read=reading.read)
        if reading.answered:
            g.checks_passed.append("answered_by_sources")
            return Outcome(Trigger.GATE_PASS)
        g.checks_failed.append("answered_by_sources")
        g.passed, g.reason = False, reasons.NOT_ANSWERED_BY_SOURCES
        return Outcome(Trigger.GATE_FAIL, g.reason,
                       f"The closest sources talk about the question but do not answer it (best answer probability "
                       f"{reading.best:.2f} < {reading.floor:.2f}).")

    def _read(self, ctx: TurnContext) -> Reading | None:
        """The reader's verdict, or None without a reader or when it fails (the gates then decide alone)."""
        if self.reader is None or not ctx.hits:
            return None
        t0 = self.clock()
        try:
            return read(ctx.question, ctx.hits, self.reader, self.settings.reader, self.settings.extractive)
        except Exception:
            log.exception("the passage reader failed; the similarity gates decide")
            return None
        finally:
            ctx.latency["read"] = round((self.clock() - t0) * 1000, 3)

    def _generate(self, ctx: TurnContext) -> Outcome:
        assert ctx.gate is not None
        r = self.settings.reader
        weak = weakly_answered(ctx.gate.scores, r.unknown_word_probability, r.unknown_word_similarity)
        absent = not_mentioned(ctx.question, ctx.hits, self.known_words, ctx.msg.scope, weak) if self.mentions else ""
        if absent:  # a yes/no question about something no source mentions (core/gate/mentions.py)
            return Outcome(Trigger.REJECT, reasons.NOT_ANSWERED_BY_SOURCES, absent)
        try:
            ctx.generation = gen = self.generator.generate(ctx.question, ctx.gate.kept)
        except Exception as exc:  # a generator bug or network error is a refusal, not a crash
            log.exception("generation failed")
            return Outcome(Trigger.REJECT, reasons.LLM_UNAVAILABLE,
                           f"{reasons.EXPLANATIONS[reasons.LLM_UNAVAILABLE]} ({type(exc).__name__})")
        if gen.error:
            return Outcome(Trigger.REJECT, reasons.LLM_UNAVAILABLE,
                           f"{reasons.EXPLANATIONS[reasons.LLM_UNAVAILABLE]} ({gen.error})")
        if not gen.text.strip():
            return Outcome(Trigger.REJECT, gen.reason or reasons.INSUFFICIENT_CONTEXT,
                           gen.explanation or "No sentence in the matching sources answers the question.")
        floor = self.settings.verify.min_generation_confidence
        if gen.confidence is not None and gen.confidence < floor:
            return Outcome(Trigger.REJECT, reasons.LOW_GENERATION_CONFIDENCE)
        return Outcome(Trigger.GENERATED)

    def _verify(self, ctx: TurnContext) -> Outcome:
        assert ctx.gate is not None and ctx.generation is not None
        judge, cfg = (self.claim_judge, self.settings.verify) if ctx.generation.llm_called else (  # extractive quote
            None, replace(self.settings.verify, require_citations=False, min_source_answer_probability=0.0))
        ctx.verification = v = verify_answer(ctx.generation.text, ctx.question, ctx.gate.kept, cfg, judge,
                                             self.settings.judge.min_claim_probability)
        if v.status == Status.REFUSE:
            return Outcome(Trigger.REJECT, v.reasons[0])
        ctx.risk = assess(v, ctx.gate, ctx.generation, claim_views(v.claim_map), self.settings.verify)
        ctx.route = route(ctx.risk.score, self.settings.review)
        if ctx.route == Route.HOLD:
            return Outcome(Trigger.HOLD, reasons.NEEDS_REVIEW)
        return Outcome(Trigger.ACCEPT)

    # -- the turn --------------------------------------------------------------
    def handle(self, msg: Incoming) -> Decision:
        """Answer or refuse one message; always returns a recorded decision, never raises."""
        with turn_context(msg.key.as_str(), msg.uid):  # every log line of the turn carries its uid and conversation
            return self._handle_safely(msg)

    def _handle_safely(self, msg: Incoming) -> Decision:
        t_start = self.clock()
        with self.store.begin_turn(msg.key, self.settings.retrieval.history_turns) as conversation:
            try:
                return self._handle(msg, conversation, t_start)
            except Exception as exc:  # last line of defence: the user gets a refusal, the turn is recorded
                log.exception("turn failed")
                ctx = TurnContext(msg=msg, question=clean_input(msg.text)[: self.settings.retrieval.max_question_chars],
                                  language=language_of(msg.text))
                ctx.reason = reasons.NO_MATCHING_SOURCE
                ctx.explanation = f"groundbot could not process the question ({type(exc).__name__}); it was recorded."
                turn = Turn(State.IDLE)
                turn.fire(Trigger.ABORT)
                ctx.latency["total"] = (self.clock() - t_start) * 1000
                return self._finish(ctx, turn, conversation, with_suggestions=False)

    def _handle(self, msg: Incoming, conversation: ConversationTurn, t_start: float) -> Decision:
        question, rejection = self._validate(msg)
        ctx = TurnContext(msg=msg, question=question, language=language_of(question))
        turn = self._begin(ctx, conversation)
        turn.fire(Trigger.PICK if msg.suggestion_id is not None else Trigger.ASK)
        if rejection:
            ctx.reason = reasons.CHAT_NOT_SET_UP if msg.scope == NOT_SET_UP else reasons.INPUT_REJECTED
            ctx.explanation = rejection
            turn.fire(Trigger.ABORT)
        while turn.state in self.stages:  # the machine drives: run the current state's stage
            name, stage = self.stages[turn.state]
            t0 = self.clock()
            try:
                outcome = stage(ctx)
            finally:
                ctx.latency[name] = round((self.clock() - t0) * 1000, 3)
            if outcome.reason:
                ctx.reason = outcome.reason
            if outcome.explanation:
                ctx.explanation = outcome.explanation
            turn.fire(outcome.trigger)
        ctx.latency["total"] = (self.clock() - t_start) * 1000
        return self._finish(ctx, turn, conversation)

    def _begin(self, ctx: TurnContext, conversation: ConversationTurn) -> Turn:
        """The conversation's state and history as the turn found them; the store retries a busy
        database within its budget, and past it the turn runs without history (and says so)."""
        if conversation.found is None:
            ctx.history = "unavailable"
            return Turn(State.IDLE)
        ctx.conversation = conversation.found
        ctx.history = "loaded" if ctx.conversation.history else "none"
        return Turn(ctx.conversation.state)

    def _finish(self, ctx: TurnContext, turn: Turn, conversation: ConversationTurn,
                with_suggestions: bool = True) -> Decision:
        """Offer suggestions with a refusal, then build and record the decision."""
        suggestions: list[str] = []
        if turn.state == State.REFUSED and with_suggestions:
            suggestions = self._suggestions(ctx)
            if suggestions:
                turn.fire(Trigger.OFFER)
        status = ctx.verification.status if ctx.verification else Status.REFUSE
        decision = build_decision(ctx, turn.state, str(status), suggestions, self.config_hash, self.settings.refusal)
        scope_decision(decision, ctx.msg.scope, self.scope_refusals)
        self._record(conversation, ctx.msg, decision, turn)
        return decision

    def suggestions_for(self, question: str, scope: str | None = None) -> list[str]:
        """Suggestions for a question answered outside a turn (an admin rejected its draft), from
        the knowledge scope it was asked in."""
        msg = Incoming(ConversationKey("", ""), "", question, scope=scope)
        return self._suggestions(TurnContext(msg=msg, question=question, language=language_of(question)))

    def _suggestions(self, ctx: TurnContext) -> list[str]:
        cfg = self.settings.refusal
        vec, scope = ctx.query_vector, ctx.msg.scope
        if scope == NOT_SET_UP:
            return []
        if vec is None or ctx.reason == reasons.INPUT_REJECTED:
            if not ctx.question:
                return []
            try:
                vec = self.embedder.embed_queries([normalize_text(ctx.question)])[0]
            except Exception:
                return []
        try:
            candidates = self.index.suggestion_candidates(vec, candidate_pool(cfg.max_suggestions), scope=scope)
        except Exception:
            return []
        candidates = prefer_language(candidates, ctx.language, lambda c: c[0])
        ranked = suggest(ctx.question, vec, candidates, cfg.suggestion_floor, 2 * cfg.max_suggestions)
        out: list[str] = []
        for text in ranked:  # offered only if asking it would be answered now
            if len(out) >= cfg.max_suggestions:
                break
            if self._answered(text, scope):
                out.append(text)
        return out

    def check_suggestions(self, limit: int, scope: str | None = None) -> int:
        """Decide now, for up to `limit` suggestions of the index, whether each would be answered,
        and store the verdicts with the index (decided at this index version and configuration),
        so every process's refusals read them instead of running a suggestion's stages while the
        user waits. `groundbot ingest`, a re-ingest from chat and a starting front end call it;
        a process that finds the verdicts stored for the current version runs nothing. Returns
        how many suggestions it covered; with knowledge scopes, those of one `scope` in it."""
        try:
            texts = self.index.suggestion_texts(limit, scope=scope)
        except Exception:
            log.exception("suggestions not listed for checking")
            return 0
        runs = self._dry_runs
        for text in texts:
            self._answered(text, scope)
        decided_at, verdicts = self._verdicts.held(scope)
        if self._dry_runs != runs and decided_at:  # something was decided here: share it
            try:
                self.index.save_suggestion_verdicts(decided_at, dict(verdicts))
            except Exception as exc:  # a read-only store: each process decides for itself
                log.warning("suggestion verdicts not stored: %s", exc)
        return len(texts)

    @property
    def _answered_cache(self) -> dict[str, bool]:  # the verdicts held for the whole knowledge base
        return self._verdicts.held(None)[1]

    def _decided_at(self, scope: str | None) -> str:
        """A verdict's index version and configuration, and after '#' the knowledge scope it is for."""
        return f"{self.index.version()}|{self.config_hash}#{scope or ''}"

    def _answered(self, text: str, scope: str | None = None) -> bool:
        """Would `text`, asked now, be answered (not refused, not held)? Read from the verdicts
        stored for this index version and configuration, else decided by running its stages once
        without recording anything (a suggestion is asked of the same index many times, so a
        refusal mostly reads the cache); with an LLM generator the check stops at the gates, so
        checking never calls the LLM."""
        try:
            cache = self._verdicts.at(scope, self._decided_at(scope), self.index.suggestion_verdicts)
        except Exception:
            return False
        key = normalize_text(text)
        known = cache.get(key)
        if known is None:
            self._dry_runs += 1
            known = cache[key] = self._dry_run(text, scope)
        return known

    def _dry_run(self, text: str, scope: str | None = None) -> bool:
        ctx = TurnContext(msg=Incoming(ConversationKey("", ""), "", text, scope=scope), question=clean_input(text),
                          language=language_of(text))
        turn = Turn(State.IDLE)
        turn.fire(Trigger.ASK)
        local = self.generator.mode is Mode.QUOTE
        try:
            while turn.state in self.stages:
                if turn.state == State.GENERATING and not local:
                    return True  # an LLM is not called to check a suggestion: passing the gates must do
                turn.fire(self.stages[turn.state][1](ctx).trigger)
        except Exception:
            log.exception("checking a suggestion failed")
            return False
        return turn.state == State.REPLIED

    def _record(self, conversation: ConversationTurn, msg: Incoming, decision: Decision, turn: Turn) -> None:
        """Persist the decision (the store retries, and spools what the database cannot take);
        `decision.recorded` says where it went, and stays empty only if it went nowhere."""
        try:
            turn_id, stored = conversation.record(msg.user_id, msg.team_id, decision, turn.state)
        except Exception as exc:
            log.error("turn %s was NOT recorded: %s", decision.turn_uid, str(exc).splitlines()[0][:300])
            decision.suggestions = []
            return
        decision.turn_id = turn_id
        decision.suggestions = stored
        decision.recorded = "database" if turn_id is not None else "spool"
