"""A turn's hooks run in the order their names say, whatever order they were registered in."""

from __future__ import annotations

import pytest

from bot.services.hooks import TURN_ORDER, Hooks, TurnHandler
from core.messages import ConversationKey, Decision, Incoming
from tests.unit.test_decision_record import decision

MSG = Incoming(ConversationKey("console", "c"), "u", "hello")


def test_hooks_run_in_the_written_order_not_the_registration_order() -> None:
    hooks, seen = Hooks(), []

    def named(name: str):  # type: ignore[no-untyped-def]
        def hook(msg: Incoming, next_: TurnHandler) -> Decision:
            seen.append(f"{name}>")
            out = next_(msg)
            seen.append(f"<{name}")
            return out
        return hook

    for name in reversed(TURN_ORDER):  # registered innermost first, as bot/app.py and serve do
        hooks.around_turn(name, named(name))
    hooks.run_turn(MSG, lambda msg: (seen.append("turn"), decision())[1])
    assert seen == [f"{n}>" for n in TURN_ORDER] + ["turn"] + [f"<{n}" for n in reversed(TURN_ORDER)]


def test_no_turn_hook_announces_a_held_draft() -> None:
    """A held draft's card is posted by the courier after the turn (bot/services/outbox.py), not
    from a hook inside it, where a slow admin platform would hold the conversation's lease."""
    assert TURN_ORDER == ("lease", "observe", "scope")
    with pytest.raises(ValueError, match="unknown turn hook"):
        Hooks().around_turn("announce", lambda msg, next_: next_(msg))


def test_an_unknown_or_repeated_hook_name_is_refused() -> None:
    hooks = Hooks()
    with pytest.raises(ValueError, match="unknown turn hook"):
        hooks.around_turn("metrics", lambda msg, next_: next_(msg))
    hooks.around_turn("scope", lambda msg, next_: next_(msg))
    with pytest.raises(ValueError, match="registered already"):
        hooks.around_turn("scope", lambda msg, next_: next_(msg))
