"""What a turn asks of the suggestions (FAQ questions and section headings, kept in their own
table: storage/index/suggestion_index.py): the ones nearest a question, some of them to check
ahead of the refusals that would offer them, and the stored verdicts on whether each would be
answered. The chunk table is never read for them.
"""

from __future__ import annotations

import numpy as np

from storage.index.ann import SearchIndexSettings, SearchPlans, ef_for, nprobes_for
from storage.index.scope_column import scope_filter
from storage.index.suggestion_index import SuggestionTable


class SuggestionLookup:
    """The suggestion table as the ChunkIndex port reads it (core/ports.py)."""

    def __init__(self, table: SuggestionTable, plans: SearchPlans, settings: SearchIndexSettings) -> None:
        self.table = table
        self.plans = plans
        self.settings = settings

    def candidates(self, query_vector: np.ndarray, limit: int, scope: str | None = None) -> list[tuple[str, np.ndarray]]:
        """The `limit` FAQ questions and section headings nearest the question, from their own
        table (written at ingest; prefiltered to `scope`); the chunk table is not read."""
        plan = self.plans.plan(self.table.table())
        nprobes = nprobes_for(plan, self.settings) if plan else 0
        return self.table.nearest(query_vector, limit, nprobes, self.settings.refine_factor,
                                  ef_for(plan, self.settings), scope_filter(scope))

    def texts(self, limit: int, scope: str | None = None) -> list[str]:
        return self.table.texts(limit, scope_filter(scope))

    def verdicts(self, decided_at: str) -> dict[str, bool]:
        return self.table.verdicts.read(decided_at)

    def save_verdicts(self, decided_at: str, verdicts: dict[str, bool]) -> None:
        self.table.verdicts.write(decided_at, verdicts)
