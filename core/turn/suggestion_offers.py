"""The questions a refusal offers: only ones the knowledge base answers now, decided once per
index version and configuration (stored with the index, read by every process) or by running a
suggestion's stages once without recording anything. It runs the same stages a turn runs
(core/turn/stages.py: `Stages`), which know nothing of the pipeline or of it."""

from __future__ import annotations

import logging

from core import reasons
from core.messages import NOT_SET_UP, ConversationKey, Incoming
from core.ports import ChunkIndex, Embedder
from core.settings import CoreSettings, Mode
from core.text.language import language_of, prefer_language
from core.text.normalize import clean_input, normalize_text
from core.turn.context import TurnContext
from core.turn.conversation import State, Trigger, Turn
from core.turn.nearest_suggestions import candidate_pool, suggest
from core.turn.stages import Stages
from core.turn.suggestion_verdicts import Verdicts

log = logging.getLogger(__name__)


class SuggestionOffers:
    """Suggestions for a refusal, each checked to be answered."""

    def __init__(self, settings: CoreSettings, embedder: Embedder, index: ChunkIndex, mode: Mode, config_hash: str,
                 stages: Stages) -> None:
        self.settings = settings
        self.embedder = embedder
        self.index = index
        self.mode = mode  # the generator's: with a language model, passing the gates must do
        self.config_hash = config_hash
        self.stages = stages
        self._verdicts = Verdicts()  # suggestion -> answered now, per knowledge scope and index version
        self._dry_runs = 0  # suggestions decided by running their stages (not read from the index)

    def suggestions_for(self, question: str, scope: str | None = None) -> list[str]:
        """Suggestions for a question answered outside a turn (an admin rejected its draft), from
        the knowledge scope it was asked in."""
        msg = Incoming(ConversationKey("", ""), "", question, scope=scope)
        return self.for_refusal(TurnContext(msg=msg, asked=question, language=language_of(question)))

    def for_refusal(self, ctx: TurnContext) -> list[str]:
        """The questions a refused turn offers, each one the knowledge base answers now."""
        if ctx.readings:  # a question with several readings is offered those readings, each answered
            return [text for text in ctx.readings if self._answered(text, ctx.msg.scope)][: self.settings.refusal.max_suggestions]
        cfg = self.settings.refusal
        vec, scope = ctx.query_vector, ctx.msg.scope
        if scope == NOT_SET_UP or ctx.reason == reasons.INDEX_UNAVAILABLE:  # nothing to search: none to offer
            return []
        if vec is None or ctx.reason == reasons.INPUT_REJECTED:
            if not ctx.question:
                return []
            try:
                vec = self.embedder.embed_queries([normalize_text(ctx.question)])[0]
            except Exception:
                log.exception("no suggestions offered: the question could not be embedded")
                return []
        try:
            candidates = self.index.suggestion_candidates(vec, candidate_pool(cfg.max_suggestions), scope=scope)
        except Exception:
            log.exception("no suggestions offered: the index's suggestions could not be read")
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
        except Exception as exc:
            log.warning("suggestion %r not offered: its verdicts could not be read (%s)", text, exc)
            return False
        key = normalize_text(text)
        known = cache.get(key)
        if known is None:
            self._dry_runs += 1
            known = cache[key] = self._dry_run(text, scope)
        return known

    def _dry_run(self, text: str, scope: str | None = None) -> bool:
        ctx = TurnContext(msg=Incoming(ConversationKey("", ""), "", text, scope=scope), asked=clean_input(text),
                          language=language_of(text))
        turn = Turn(State.IDLE)
        turn.fire(Trigger.ASK)
        local = self.mode is Mode.QUOTE
        try:  # an LLM is not called to check a suggestion: passing the gates must do
            self.stages.run(ctx, turn, stop_at=None if local else State.GENERATING)
        except Exception:
            log.exception("checking a suggestion failed")
            return False
        return turn.state == State.REPLIED or (not local and turn.state == State.GENERATING)

