"""One turn, end to end: retrieve -> gate -> generate -> verify -> reply or refuse.

The state machine drives the turn: every working state has one stage, every stage has one
shape (it reads and extends the `TurnContext` and returns an `Outcome`: the trigger that moves
the machine on, and why), and the turn loops until the machine rests. Every turn ends in
exactly one decision record (core/turn/record.py) written to the transcript store.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace

from core import reasons
from core.catalogue import say
from core.gate.ambiguity import is_short, named_readings, reading_question, readings
from core.gate.ask_gates import ASK_GATES, AskView, Refusal
from core.gate.mentions import KnownWords
from core.gate.passage_reading import Reading, asked_verbatim, read, read_rest
from core.gate.similarity_gates import run_gates
from core.messages import (
    NOT_SET_UP,
    Decision,
    History,
    Hit,
    Incoming,
    PriorTurn,
    ReadingMethod,
    Recorded,
    Resolution,
)
from core.ports import ChunkIndex, ConversationTurn, Models, PassageReader, TranscriptStore
from core.reasons import Status
from core.retrieve.resolve import earlier
from core.retrieve.search import Searched, resolve_turn, search, start_searches
from core.settings import CoreSettings, GateSettings, for_mode
from core.text.language import language_of, prefer_language
from core.text.normalize import clean_input
from core.turn.conversation import TURN, State, Trigger, Turn
from core.turn.intake import vet
from core.turn.record import TurnContext, build_decision, scope_decision
from core.turn.risk import Route, assess, route
from core.turn.stages import Outcome, Stage, run_stages
from core.turn.suggestion_offers import SuggestionOffers
from core.turn.turnlog import turn_context
from core.verify import verify_answer

log = logging.getLogger(__name__)


class Pipeline:
    """The grounded-answer pipeline; adapters call `handle` once per user message."""

    def __init__(
        self,
        settings: CoreSettings,
        models: Models,
        index: ChunkIndex,
        store: TranscriptStore,
        *,
        scope_refusals: Mapping[str, str] | None = None,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.config_hash = settings.config_hash() + ":" + models.generator.name + ":" + models.embedder.name
        self.settings = settings = for_mode(settings, models.generator.mode)  # what every stage reads, resolved once
        # the models the turn runs: one the settings turn off is None here, its step left to the local rules
        self.models = replace(models, reader=models.reader if settings.reader.enabled else None,
                              claim_judge=models.claim_judge if settings.judge.claims else None,
                              term_selector=models.term_selector if settings.retrieval.term_selector else None)
        # a later turn's searches run at once (core/retrieve/search.py), and its two readings are
        # read at once (`_read`); the threads start on first use
        self.searches = ThreadPoolExecutor(3, thread_name_prefix="groundbot-search")
        self.scope_refusals = dict(scope_refusals or {})  # a knowledge scope's own refusal message
        self.index = index
        self.known_words = KnownWords(index)  # core/gate/mentions.py: the index's words, looked up once per version
        self.store = store
        self.clock = clock
        # the stage each working state runs (its latency key, the stage), in the order TURN writes
        # down (core/turn/conversation.py); resting states run none
        by_name: dict[str, Stage] = {"retrieve": self._retrieve, "gate": self._gate, "generate": self._generate,
                                     "verify": self._verify}
        self.stages: dict[str, tuple[str, Stage]] = {step.state: (step.stage, by_name[step.stage]) for step in TURN}
        # the questions a refusal offers, each checked to be answered by running these stages
        self.offers = SuggestionOffers(settings, models.embedder, index, models.generator.mode, self.config_hash,
                                       self.stages, clock)

    def suggestions_for(self, question: str, scope: str | None = None) -> list[str]:
        """Suggestions for a question answered outside a turn (SuggestionOffers.suggestions_for)."""
        return self.offers.suggestions_for(question, scope)

    def close(self) -> None:
        """Stop the search threads once the turns in flight are done (the App closes it with itself)."""
        self.searches.shutdown(wait=True)

    def check_suggestions(self, limit: int, scope: str | None = None) -> int:
        """Decide and store whether the index's suggestions are answered (SuggestionOffers)."""
        return self.offers.check_suggestions(limit, scope)

    def passages(self, query: str, k: int, scope: str | None = None) -> tuple[list[Hit], str]:
        """The `k` chunks a turn would retrieve for `query` asked on its own in `scope`, best
        first, for a caller that reads the sources itself (the MCP `search` tool); or, with none,
        why the query cannot be searched (the turn's own intake rules). Nothing is recorded."""
        question, rejection = vet(query, self.settings.retrieval.max_question_chars)
        if rejection is not None:
            return [], say(rejection.key, language_of(question or query), **rejection.fields)
        cfg = self.settings.retrieval
        _, _, hits = search(Resolution(asked=question, resolved=question), self.models.embedder, self.index, k, scope,
                            cfg.rrf_k, self.searches, sentences=cfg.sentence_queries)
        return hits, ""

    # -- input -----------------------------------------------------------------
    def _validate(self, msg: Incoming) -> tuple[str, Outcome | None]:
        """(the question, and for a message that cannot be asked the outcome that refuses it)."""
        limit = self.settings.retrieval.max_question_chars
        if msg.scope == NOT_SET_UP:  # nothing of the knowledge base is read for a chat no scope serves
            return clean_input(msg.text)[:limit], Outcome(Trigger.ABORT, reasons.CHAT_NOT_SET_UP)
        if msg.rejection:  # the adapter could not read it: the asker is told so, `/why` says how
            question = clean_input(msg.text)[:limit]
            return question, Outcome(Trigger.ABORT, reasons.INPUT_REJECTED,
                                     say("input_unreadable", language_of(question)), msg.rejection)
        text = msg.text
        if msg.suggestion_id is not None:
            try:
                picked = self.store.suggestion_text(msg.suggestion_id)
            except Exception as exc:  # the database is away: an outage, not a message that cannot be asked
                log.error("the picked suggestion could not be read", exc_info=exc)
                return "", Outcome(Trigger.ABORT, reasons.DATABASE_UNAVAILABLE,
                                   detail=f"the transcript database could not be read ({type(exc).__name__})")
            if picked is None:
                return "", Outcome(Trigger.ABORT, reasons.INPUT_REJECTED, say("suggestion_gone", language_of(msg.text)))
            text = picked
        question, rejection = vet(text, limit)
        if rejection is None:
            return question, None
        return question, Outcome(Trigger.ABORT, reasons.INPUT_REJECTED,
                                 say(rejection.key, language_of(question or text), **rejection.fields))

    # -- stages: each reads the turn context and says how the turn moves on ------
    def _retrieve(self, ctx: TurnContext) -> Outcome:
        """Read the question in its conversation (every later stage reads that reading), then
        search, in steps: the earlier turns, the searches every reading makes (begun at once), the
        reading, the search, then asking back about a thing the conversation never named."""
        prior = self._history(ctx)
        try:
            ctx.index_version = self.index.version()
            started = self._start_searches(ctx.asked, ctx.msg.scope, prior)
        except Exception as exc:
            return _unsearchable(exc)
        t0 = self.clock()
        ctx.resolution = resolution = self._resolve(ctx.asked, prior)
        ctx.latency["resolve"] = round((self.clock() - t0) * 1000, 3)
        ctx.question = resolution.resolved
        try:
            self._search(ctx, resolution, started)
        except Exception as exc:
            return _unsearchable(exc)
        return self._ask_back(ctx, resolution)

    def _history(self, ctx: TurnContext) -> list[PriorTurn]:
        """The earlier turns the question may lean on (the last few of its scope), taken once a
        turn: the searches begun early, the reading and a model's rewrite all read these."""
        history = ctx.conversation.history if ctx.conversation else []
        return earlier(history, ctx.msg.scope, self.settings.retrieval.history_turns)

    def _start_searches(self, asked: str, scope: str | None, prior: Sequence[PriorTurn]) -> dict[str, Searched]:
        """A later turn's search of the question as asked, begun now: it is made whatever the
        reading, which runs meanwhile. A first question has one search, made by `_search`."""
        if not prior:
            return {}
        cfg = self.settings.retrieval
        return start_searches([asked], self.models.embedder, self.index, cfg.top_k, scope, self.searches)

    def _resolve(self, asked: str, prior: Sequence[PriorTurn]) -> Resolution:
        """The question read with the earlier turns (the term selector's reading, or a model's
        rewrite): what every later stage reads as the question."""
        cfg, m = self.settings.retrieval, self.models
        return resolve_turn(asked, prior, m.rewriter, m.term_selector, cfg.term_threshold)

    def _search(self, ctx: TurnContext, resolution: Resolution, started: dict[str, Searched]) -> None:
        """Set the turn's hits: every query of the reading searched (those `started` taken up) and
        fused; in a mixed-language knowledge base, the sources in the question's language first
        where there are any. Raises when the index cannot be searched."""
        cfg = self.settings.retrieval
        query, vector, hits = search(resolution, self.models.embedder, self.index, cfg.top_k, ctx.msg.scope,
                                     cfg.rrf_k, self.searches, started, cfg.sentence_queries)
        ctx.retrieval_query, ctx.query_vector = query, vector
        ctx.hits = prefer_language(hits, ctx.language, lambda h: h.text)

    def _ask_back(self, ctx: TurnContext, resolution: Resolution) -> Outcome:
        """A later question about "this burger" when the conversation never named one is asked
        back, offering the things the sources name: it has as many readings as there are burgers."""
        unnamed = resolution.unnamed
        if not unnamed or not self.settings.retrieval.ask_back:
            return Outcome(Trigger.RETRIEVED)
        asked = resolution.stated if unnamed in resolution.stated else ctx.asked  # the phrase as typed
        ctx.readings = named_readings(asked, unnamed, ctx.hits, self.settings.refusal.max_suggestions + 1)
        return Outcome(Trigger.ABORT, reasons.AMBIGUOUS_QUESTION, say("unnamed_thing", ctx.language, phrase=unnamed))

    def _gate(self, ctx: TurnContext) -> Outcome:
        """Every refusal before an answer is written, as named gates in order (docs/architecture.md,
        "How do I add a gate?"): the similarity gates; with a passage reader, its verdict
        (`answered_by_sources`: the reader reorders the chunks, the gates and the generator read
        its order, and the similarity gates only keep out what is plainly off-topic); the gates
        that read the ask (core/gate/ask_gates.py); then `one_reading`. The first that refuses
        ends the chain, and the stage sets the gate's verdict (`ctx.gate`) once, as it returns."""
        reading = self._apply_reader(ctx)
        similarity = run_gates(ctx.retrieval_query, ctx.hits, self._gate_settings(reading))
        if not similarity.passed:
            ctx.gate = similarity
            return Outcome(Trigger.GATE_FAIL, similarity.reason)
        scores = dict(similarity.scores)
        if reading is not None:
            scores.update(reader_best=round(reading.best, 4), reader_chunks_read=reading.read)
        passed, refused = self._gates_after_similarity(ctx, reading, scores)
        ctx.gate = replace(similarity, passed=refused is None, reason=refused.outcome.reason if refused else "",
                           scores=scores, checks_passed=similarity.checks_passed + passed,
                           checks_failed=similarity.checks_failed + ([refused.gate] if refused else []))
        if refused is None:
            return Outcome(Trigger.GATE_PASS)
        if refused.readings:
            ctx.readings = list(refused.readings)
        return refused.outcome

    def _apply_reader(self, ctx: TurnContext) -> Reading | None:
        """Run the passage reader and apply what it found to the turn: the chunks in its order, and
        the question as typed where that is better answered than with the words picked. Returns its
        verdict; None without a reader, or when it fails (the gates then decide alone)."""
        reader = self.models.reader
        if reader is None or not ctx.hits:
            return None
        t0 = self.clock()
        try:
            verdict, stands = self._read(ctx.question, ctx.resolution, ctx.hits, reader)
        finally:
            ctx.latency["read"] = round((self.clock() - t0) * 1000, 3)
        if stands is not None:
            ctx.resolution, ctx.question = stands, stands.resolved
        if verdict is not None:
            ctx.hits = verdict.hits
        return verdict

    def _read(self, question: str, resolution: Resolution | None, hits: list[Hit],
              reader: PassageReader) -> tuple[Reading | None, Resolution | None]:
        """(the reader's verdict, and the reading of the question that stands when it is not the
        turn's own); (None, None) when the reader fails. The words picked may be a topic the
        question has left ("Where is the office?" after parental leave): the reader also reads it
        as typed, at the same time (a reading's first chunk is read alone, on one core), and the
        reading it finds better answered stands."""
        r, cfg, extractive = resolution, self.settings.reader, self.settings.extractive
        try:
            as_typed = self.searches.submit(read, r.asked, hits, reader, cfg, extractive) \
                if r is not None and r.method == ReadingMethod.TERMS else None
            verdict = read(question, hits, reader, cfg, extractive)
            if r is None or as_typed is None:
                return verdict, None
            typed = as_typed.result()
            if (typed.answered, typed.best) <= (verdict.answered, verdict.best):
                return verdict, None
            return typed, replace(r, resolved=r.asked, follow_up=False, method=ReadingMethod.STANDALONE,
                                  why=f"better answered as typed than with {', '.join(r.terms)}")
        except Exception:
            log.exception("the passage reader failed; the similarity gates decide")
            return None, None

    def _gate_settings(self, reading: Reading | None) -> GateSettings:
        """The similarity gates' settings: with the reader's verdict, a one-paragraph document can
        answer in full, so how much context is enough is the reader's call."""
        gates = self.settings.gates
        if reading is None:
            return gates
        r = self.settings.reader
        return replace(gates, min_top1_similarity=min(gates.min_top1_similarity, r.min_top1_similarity),
                       min_mean_confidence=min(gates.min_mean_confidence, r.min_mean_confidence), min_context_chars=0)

    def _gates_after_similarity(self, ctx: TurnContext, reading: Reading | None,
                                scores: dict[str, float | int | None]) -> tuple[list[str], GateRefusal | None]:
        """The gates after the similarity gates, in order, up to the first that refuses: (the
        names of those that passed, and the refusal or None). `one_reading` is named only when it
        refuses, as the record has always listed it."""
        passed: list[str] = []
        if reading is not None:
            if not reading.answered:
                return passed, _refusal(ctx, "answered_by_sources",
                                        Refusal(reasons.NOT_ANSWERED_BY_SOURCES, "gate_not_answered", {}))
            passed.append("answered_by_sources")
        view = AskView(ctx.resolution.stated if ctx.resolution else ctx.question, ctx.hits, scores,
                       self.known_words, ctx.msg.scope, self.settings)
        for name, gate in ASK_GATES:
            refusal = gate(view)
            if refusal is not None:
                return passed, _refusal(ctx, name, refusal)
            passed.append(name)
        offered = self._other_readings(ctx, reading) if reading is not None else []
        if offered:
            return passed, GateRefusal("one_reading", Outcome(
                Trigger.GATE_FAIL, reasons.AMBIGUOUS_QUESTION,
                detail=f"The sources answer {len(offered)} different readings of the question."), tuple(offered))
        return passed, None

    def _other_readings(self, ctx: TurnContext, reading: Reading) -> list[str]:
        """The readings to ask back about (none: the question has one): a short question the
        sources answer in clearly different ways (core/gate/ambiguity.py); a follow-up or a
        question asked as a heading is read as meant."""
        if (ctx.resolution and ctx.resolution.follow_up) or asked_verbatim(ctx.question, ctx.hits, self.settings.extractive):
            return []
        reader, cfg = self.models.reader, self.settings.retrieval
        if not is_short(ctx.question, cfg) or reader is None:
            return []
        every = read_rest(ctx.question, ctx.hits, reader, cfg.top_k)  # the readings, not the order
        return [reading_question(h) for h in readings(ctx.question, every, reading.floor, cfg)]

    def _generate(self, ctx: TurnContext) -> Outcome:
        if ctx.gate is None:  # the state machine runs this stage only after the gates
            raise RuntimeError("generating before the gates ran")
        stated = ctx.resolution.stated if ctx.resolution else ctx.question  # the user's words, not selected ones
        try:
            ctx.generation = gen = self.models.generator.generate(stated, ctx.gate.kept,
                                                                  ctx.question if ctx.question != stated else "")
        except Exception as exc:  # a generator bug or network error is a refusal, not a crash
            log.exception("generation failed")
            return Outcome(Trigger.REJECT, reasons.LLM_UNAVAILABLE, detail=f"the generator raised {type(exc).__name__}")
        if gen.error:
            return Outcome(Trigger.REJECT, reasons.LLM_UNAVAILABLE, detail=gen.error)
        if not gen.text.strip():
            if gen.reason:  # the generator's own reason: its text, and the generator's numbers for `/why`
                return Outcome(Trigger.REJECT, gen.reason, detail=gen.detail)
            return Outcome(Trigger.REJECT, reasons.INSUFFICIENT_CONTEXT, say("no_sentence_answers", ctx.language),
                           gen.detail)
        floor = self.settings.verify.min_generation_confidence
        if gen.confidence is not None and gen.confidence < floor:
            return Outcome(Trigger.REJECT, reasons.LOW_GENERATION_CONFIDENCE)
        return Outcome(Trigger.GENERATED)

    def _verify(self, ctx: TurnContext) -> Outcome:
        if ctx.gate is None or ctx.generation is None:  # the state machine runs this stage only after both
            raise RuntimeError("verifying before the gates ran and an answer was generated")
        judge, cfg = (self.models.claim_judge, self.settings.verify) if ctx.generation.llm_called else (  # extractive quote
            None, replace(self.settings.verify, require_citations=False, min_source_answer_probability=0.0))
        stated = ctx.resolution.stated if ctx.resolution else ctx.question
        ctx.verification = v = verify_answer(ctx.generation.text, stated, ctx.gate.kept, cfg, judge,
                                             self.settings.judge.min_claim_probability)
        if v.status == Status.REFUSE:
            return Outcome(Trigger.REJECT, v.reasons[0])
        ctx.risk = assess(v, ctx.gate, ctx.generation, v.claim_map, self.settings.verify)
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
                ctx.reason = reasons.INTERNAL_ERROR
                ctx.detail = f"the turn failed with {type(exc).__name__}; the log has its traceback"
                turn = Turn(State.IDLE)
                turn.fire(Trigger.ABORT)
                ctx.latency["total"] = (self.clock() - t_start) * 1000
                return self._finish(ctx, turn, conversation, with_suggestions=False)

    def _handle(self, msg: Incoming, conversation: ConversationTurn, t_start: float) -> Decision:
        question, rejected = self._validate(msg)
        ctx = TurnContext(msg=msg, question=question, language=language_of(question))
        turn = self._begin(ctx, conversation)
        turn.fire(Trigger.PICK if msg.suggestion_id is not None else Trigger.ASK)
        if rejected is not None:
            ctx.reason, ctx.explanation, ctx.detail = rejected.reason, rejected.explanation, rejected.detail
            turn.fire(rejected.trigger)
        run_stages(self.stages, ctx, turn, self.clock)  # the machine drives: each state's stage runs
        ctx.latency["total"] = (self.clock() - t_start) * 1000
        return self._finish(ctx, turn, conversation)

    def _begin(self, ctx: TurnContext, conversation: ConversationTurn) -> Turn:
        """The conversation's state and history as the turn found them; the store retries a busy
        database within its budget, and past it the turn runs without history (and says so)."""
        if conversation.found is None:
            ctx.history = History.UNAVAILABLE
            return Turn(State.IDLE)
        ctx.conversation = conversation.found
        ctx.history = History.LOADED if ctx.conversation.history else History.NONE
        return Turn(ctx.conversation.state)

    def _finish(self, ctx: TurnContext, turn: Turn, conversation: ConversationTurn,
                with_suggestions: bool = True) -> Decision:
        """Offer suggestions with a refusal, then build and record the decision."""
        suggestions: list[str] = []
        if turn.state == State.REFUSED and with_suggestions:
            suggestions = self.offers.for_refusal(ctx)
            if suggestions:
                turn.fire(Trigger.OFFER)
        status = ctx.verification.status if ctx.verification else Status.REFUSE
        decision = build_decision(ctx, State(turn.state), Status(status), suggestions, self.config_hash,
                                  self.settings.refusal, self.settings.reader.unprompted_probability,
                                  verbatim=turn.state == State.REPLIED and bool(ctx.hits)
                                  and asked_verbatim(ctx.question, ctx.hits, self.settings.extractive))
        scope_decision(decision, ctx.msg.scope, self.scope_refusals)
        self._record(conversation, ctx.msg, decision, turn)
        return decision

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
        decision.recorded = Recorded.DATABASE if turn_id is not None else Recorded.SPOOL


@dataclass(frozen=True)
class GateRefusal:
    """A gate after the similarity gates that refused: its name (the record's `checks_failed`),
    how the turn moves on, and for `one_reading` the readings offered back."""

    gate: str
    outcome: Outcome
    readings: tuple[str, ...] = ()


def _refusal(ctx: TurnContext, name: str, refusal: Refusal) -> GateRefusal:
    """The gate `name` refuses with its catalogue text, in the asker's language."""
    return GateRefusal(name, Outcome(Trigger.GATE_FAIL, refusal.reason, say(refusal.key, ctx.language, **refusal.fields)))


def _unsearchable(exc: Exception) -> Outcome:
    """A search that failed is a refusal saying so (an outage, not a gap in the knowledge base);
    the turn is still recorded."""
    log.error("retrieval failed", exc_info=exc)
    return Outcome(Trigger.ABORT, reasons.INDEX_UNAVAILABLE,
                   detail=f"the knowledge base could not be searched ({type(exc).__name__})")
