"""Cross-cutting work around a turn and after admin events, registered on the App as hooks.

Like slack-bolt's middleware list: a turn hook is `hook(msg, next)` and returns the decision,
so it can hold something around the turn (the conversation lease of `groundbot serve`), look
at the result (metrics, the per-turn log line) or both. Nothing that waits on another platform
runs here: a held draft's announcement to admins is queued in the outbox with its review item
and sent after the turn (bot/services/outbox.py).
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

# The order of a turn's hooks, outermost first; a hook is registered by one of these names:
# - lease: `groundbot serve`'s conversation lease, held for the whole turn (bot/server/shared.py)
# - observe: the turn counted and logged once it is decided, whoever decided it
# - scope: the chat's knowledge scope set on the message before the pipeline reads it (bot/app.py)
# (a held draft is not announced from a hook, inside the lease: the courier posts it after the turn)
TURN_ORDER = ("lease", "observe", "scope")


@dataclass
class Hooks:
    """Turn hooks by name (run in TURN_ORDER), and the listeners of ingest runs, syncs and votes."""

    turn: dict[str, TurnHook] = field(default_factory=dict)
    ingest: list[Callable[[IngestResult], None]] = field(default_factory=list)
    vote: list[Callable[[int], None]] = field(default_factory=list)
    sync: list[Callable[[SyncReport], None]] = field(default_factory=list)

    def around_turn(self, name: str, hook: TurnHook) -> None:
        """Register the turn hook `name` (one of TURN_ORDER, once): its place is its name's."""
        if name not in TURN_ORDER:
            raise ValueError(f"unknown turn hook {name!r}: one of {', '.join(TURN_ORDER)}")
        if name in self.turn:
            raise ValueError(f"turn hook {name!r} is registered already")
        self.turn[name] = hook

    def run_turn(self, msg: Incoming, handler: TurnHandler) -> Decision:
        """`handler(msg)` wrapped in every registered turn hook, in TURN_ORDER (first outermost)."""
        call = handler
        for name in reversed(TURN_ORDER):
            if name in self.turn:
                call = _around(self.turn[name], call)
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
