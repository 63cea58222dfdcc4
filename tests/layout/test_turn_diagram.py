"""The order of a turn is written once, as `TURN` in core/turn/conversation.py: the machine's
transitions and the pipeline's stages follow from it, and docs/architecture.md draws it. A move
added to the machine and not drawn there, or drawn and not made, fails here."""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from core.turn.conversation import TRANSITIONS, TURN, diagram, moves

MAP = Path(__file__).resolve().parents[2] / "docs" / "architecture.md"


def drawn() -> str:
    """The fenced drawing under "What is a turn?" in docs/architecture.md."""
    section = MAP.read_text(encoding="utf-8").split("## What is a turn?", 1)[1].split("\n## ", 1)[0]
    found = re.search(r"```\n(.*?)\n```", section, re.S)
    assert found, "docs/architecture.md's \"What is a turn?\" has no drawing"
    return found.group(1)


def test_the_architecture_page_draws_every_move_of_a_turn() -> None:
    assert drawn() == diagram(), (
        "docs/architecture.md's turn drawing differs from core/turn/conversation.py's TURN; put this there:\n"
        + diagram())


def _sources(sources: str | Iterable[object]) -> list[str]:
    """The states a move leaves, as strings ("*": every state)."""
    return [sources] if isinstance(sources, str) else [str(s) for s in sources]


def test_every_move_drawn_is_a_transition_of_the_machine() -> None:
    made = {(t["trigger"], src, t["dest"]) for t in TRANSITIONS for src in _sources(t["source"])}
    listed = {(str(t), src, str(dest)) for t, sources, dest in moves() for src in _sources(sources)}
    assert made == listed
    for step in TURN:  # every working state is drawn with the stage it runs
        assert f"{step.state} [{step.stage}]" in diagram()
