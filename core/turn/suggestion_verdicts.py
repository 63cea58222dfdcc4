"""Whether each suggestion would be answered, as the pipeline holds it between refusals.

Why a module of its own: with knowledge scopes a suggestion is answered in one scope and
refused in another, so the verdicts are held per scope (None = the whole knowledge base), each
for one index version and configuration (`decided_at`), and read again from the index when
that changes (core/turn/pipeline.py decides the ones it finds missing).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

log = logging.getLogger(__name__)


class Verdicts:
    """suggestion (normalised) -> answered, per knowledge scope, for one `decided_at` each."""

    def __init__(self) -> None:
        self._held: dict[str | None, tuple[str, dict[str, bool]]] = {}

    def at(self, scope: str | None, decided_at: str, stored: Callable[[str], dict[str, bool]]) -> dict[str, bool]:
        """The scope's verdicts decided at `decided_at`: those held, else the ones `stored`
        returns (the index's), which the caller then adds to."""
        held = self._held.get(scope)
        if held is None or held[0] != decided_at:
            held = self._held[scope] = (decided_at, {})
            try:
                held[1].update(stored(decided_at))
            except Exception as exc:
                log.warning("stored suggestion verdicts not read: %s", exc)
        return held[1]

    def held(self, scope: str | None) -> tuple[str, dict[str, bool]]:
        """(decided_at, verdicts) held for the scope; ("", {}) before any."""
        return self._held.get(scope, ("", {}))
