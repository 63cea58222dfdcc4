"""The retrieve stage: the question read in its conversation (every later stage reads that
reading), then searched, in steps: the earlier turns, the searches every reading makes (begun at
once), the reading, the search. An index that cannot be searched refuses the turn, saying so (an
outage, not a gap in the knowledge base); the turn is still recorded."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from dataclasses import replace

from core import reasons
from core.messages import Hit, PriorTurn, Resolution
from core.ports import ChunkIndex, Models
from core.retrieve.resolve import earlier
from core.retrieve.search import Retrieved, Searched, resolve_turn, search, start_searches
from core.settings import RetrievalSettings
from core.text.language import prefer_language
from core.turn.context import TurnContext
from core.turn.conversation import Trigger
from core.turn.stages import Outcome

log = logging.getLogger(__name__)


class RetrieveStage:
    """The retrieve stage of every turn, and the same search for a caller outside a turn."""

    def __init__(self, cfg: RetrievalSettings, models: Models, index: ChunkIndex, pool: Executor,
                 clock: Callable[[], float]) -> None:
        self.cfg = cfg
        self.models = models
        self.index = index
        self.pool = pool  # a later turn's searches run at once (core/retrieve/search.py)
        self.clock = clock

    def __call__(self, ctx: TurnContext) -> Outcome:
        history = ctx.conversation.history if ctx.conversation else []
        prior = earlier(history, ctx.msg.scope, self.cfg.history_turns)  # taken once: every step reads these
        found = Retrieved()
        try:
            found = Retrieved(index_version=self.index.version())
            started = self._start_searches(ctx.asked, ctx.msg.scope, prior)
        except Exception as exc:
            return _unsearchable(exc, found)
        t0 = self.clock()
        resolution = resolve_turn(ctx.asked, prior, self.models.rewriter, self.models.term_selector,
                                  self.cfg.term_threshold)
        timings = {"resolve": round((self.clock() - t0) * 1000, 3)}
        found = replace(found, resolution=resolution)
        try:
            query, vector, hits = search(resolution, self.models.embedder, self.index, self.cfg.top_k, ctx.msg.scope,
                                         self.cfg.rrf_k, self.pool, started, self.cfg.sentence_queries)
        except Exception as exc:
            return _unsearchable(exc, found, timings)
        # in a mixed-language knowledge base, the sources in the question's language first where there are any
        hits = prefer_language(hits, ctx.language, lambda h: h.text)
        return Outcome(Trigger.RETRIEVED, found=replace(found, query=query, vector=vector, hits=hits), timings=timings)

    def _start_searches(self, asked: str, scope: str | None, prior: Sequence[PriorTurn]) -> dict[str, Searched]:
        """A later turn's search of the question as asked, begun now: it is made whatever the
        reading, which runs meanwhile. A first question has one search, made with the reading's."""
        if not prior:
            return {}
        return start_searches([asked], self.models.embedder, self.index, self.cfg.top_k, scope, self.pool)

    def passages(self, question: str, k: int, scope: str | None = None) -> list[Hit]:
        """The `k` chunks a turn would retrieve for `question` asked on its own in `scope`."""
        _, _, hits = search(Resolution(asked=question, resolved=question), self.models.embedder, self.index, k, scope,
                            self.cfg.rrf_k, self.pool, sentences=self.cfg.sentence_queries)
        return hits


def _unsearchable(exc: Exception, found: Retrieved, timings: dict[str, float] | None = None) -> Outcome:
    """A search that failed is a refusal saying so, with what the stage found before it failed."""
    log.error("retrieval failed", exc_info=exc)
    return Outcome(Trigger.ABORT, reasons.INDEX_UNAVAILABLE,
                   detail=f"the knowledge base could not be searched ({type(exc).__name__})", found=found,
                   timings=timings or {})
