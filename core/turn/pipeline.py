"""One turn, end to end: retrieve -> gate -> generate -> verify -> reply or refuse.

The state machine drives the turn: every working state has one stage (core/turn/conversation.py:
`TURN`), every stage has one shape (it reads the `TurnContext` and returns an `Outcome`: the
trigger that moves the machine on, why, and its typed result), and the pipeline only runs them in
order until the machine rests. Every turn ends in exactly one decision record
(core/turn/record.py) written to the transcript store.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

from core import reasons
from core.catalogue import say
from core.gate.mentions import KnownWords
from core.gate.passage_reading import asked_verbatim
from core.gate.view import GateTools
from core.messages import Decision, History, Hit, Incoming, Recorded
from core.ports import ChunkIndex, ConversationTurn, Models, TranscriptStore
from core.reasons import Status
from core.settings import CoreSettings, for_mode
from core.text.language import language_of
from core.text.normalize import clean_input
from core.turn.answering import GenerateStage, VerifyStage
from core.turn.context import TurnContext
from core.turn.conversation import State, Trigger, Turn
from core.turn.gating import GateStage
from core.turn.intake import admit, vet
from core.turn.record import build_decision, scope_decision
from core.turn.retrieving import RetrieveStage
from core.turn.stages import Stages
from core.turn.suggestion_offers import SuggestionOffers
from core.turn.turnlog import turn_context

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
        self.models = m = replace(models, reader=models.reader if settings.reader.enabled else None,
                                  claim_judge=models.claim_judge if settings.judge.claims else None,
                                  term_selector=models.term_selector if settings.retrieval.term_selector else None)
        # a later turn's searches run at once, and a follow-up's two readings are read at once;
        # the threads start on first use
        self.searches = ThreadPoolExecutor(3, thread_name_prefix="groundbot-search")
        self.scope_refusals = dict(scope_refusals or {})  # a knowledge scope's own refusal message
        self.store = store
        self.clock = clock
        self.retrieval = RetrieveStage(settings.retrieval, m, index, self.searches, clock)
        self.stages = Stages({
            "retrieve": self.retrieval,
            "gate": GateStage(GateTools(settings, m.reader, KnownWords(index), self.searches, clock)),
            "generate": GenerateStage(m.generator, settings.verify.min_generation_confidence),
            "verify": VerifyStage(settings, m.claim_judge),
        }, clock)
        # the questions a refusal offers, each checked to be answered by running the same stages
        self.offers = SuggestionOffers(settings, models.embedder, index, models.generator.mode, self.config_hash,
                                       self.stages)

    @property
    def index(self) -> ChunkIndex:
        """The chunk index the turns search."""
        return self.retrieval.index

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
        return self.retrieval.passages(question, k, scope), ""

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
                ctx = TurnContext(msg=msg, asked=clean_input(msg.text)[: self.settings.retrieval.max_question_chars],
                                  language=language_of(msg.text))
                ctx.reason = reasons.INTERNAL_ERROR
                ctx.detail = f"the turn failed with {type(exc).__name__}; the log has its traceback"
                turn = Turn(State.IDLE)
                turn.fire(Trigger.ABORT)
                ctx.latency["total"] = (self.clock() - t_start) * 1000
                return self._finish(ctx, turn, conversation, with_suggestions=False)

    def _handle(self, msg: Incoming, conversation: ConversationTurn, t_start: float) -> Decision:
        question, refused = admit(msg, self.store, self.settings.retrieval.max_question_chars)
        ctx = TurnContext(msg=msg, asked=question, language=language_of(question))
        turn = self._begin(ctx, conversation)
        turn.fire(Trigger.PICK if msg.suggestion_id is not None else Trigger.ASK)
        if refused is not None:
            ctx.reason, ctx.explanation, ctx.detail = refused.reason, refused.explanation, refused.detail
            turn.fire(Trigger.ABORT)
        self.stages.run(ctx, turn)  # the machine drives: each state's stage runs
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
        decision = build_decision(ctx, State(turn.state), status, suggestions, self.config_hash,
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
