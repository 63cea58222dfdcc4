"""Cross-cutting work around a turn and after admin events, registered on the App as hooks.

Like slack-bolt's middleware list: a turn hook is `hook(msg, next)` and returns the decision,
so it can hold something around the turn (the conversation lease of `groundbot serve`), look
at the result (metrics, the per-turn log line, announcing a held draft to admins) or both.
Events that happen outside a turn (a re-ingest from chat, a vote) are told to listeners, so a
counter moves whichever platform or path the event came through.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from core.messages import Decision, Incoming
from storage.ingestion.sources.sync import SyncReport

log = logging.getLogger(__name__)

TurnHandler = Callable[[Incoming], Decision]
TurnHook = Callable[[Incoming, TurnHandler], Decision]
IngestResult = Literal["ok", "refused", "failed"]


@dataclass
class Hooks:
    """Turn hooks, outermost first, and the listeners of ingest runs and stored votes."""

    turn: list[TurnHook] = field(default_factory=list)
    ingest: list[Callable[[IngestResult], None]] = field(default_factory=list)
    vote: list[Callable[[int], None]] = field(default_factory=list)
    sync: list[Callable[[SyncReport], None]] = field(default_factory=list)

    def run_turn(self, msg: Incoming, handler: TurnHandler) -> Decision:
        """`handler(msg)` wrapped in every turn hook, the first registered outermost."""
        call = handler
        for hook in reversed(self.turn):
            call = _around(hook, call)
        return call(msg)

    def ingested(self, result: IngestResult) -> None:
        """A re-ingest asked for from chat ran (ok), was refused before it ran, or failed."""
        self._tell(self.ingest, result)

    def synced(self, report: SyncReport) -> None:
        """A source was synced (or failed, or was skipped because another worker holds it)."""
        self._tell(self.sync, report)

    def voted(self, value: int) -> None:
        """A user's vote was stored (a new vote, or one changed from up to down or back)."""
        self._tell(self.vote, value)

    @staticmethod
    def _tell(listeners: list[Callable[..., None]], *args: object) -> None:
        for listener in listeners:
            try:  # a listener's failure (a metrics backend) must not undo what happened
                listener(*args)
            except Exception as exc:
                log.warning("hook %r failed: %s", listener, exc)


def _around(hook: TurnHook, inner: TurnHandler) -> TurnHandler:
    return lambda msg: hook(msg, inner)
