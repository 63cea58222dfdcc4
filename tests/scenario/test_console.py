"""The console REPL over the real pipeline, driven through its stdin/stdout."""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any

import pytest

from adapters.console import ConsoleChat


def run_console(app: Any, lines: list[str], user: str = "local") -> str:
    out = io.StringIO()
    ConsoleChat(app, user_id=user, stdin=io.StringIO("\n".join(lines) + "\n"), stdout=out).run()
    return out.getvalue()


def test_answer_refusal_pick_why_and_feedback(make_app: Callable[..., Any]) -> None:
    app = make_app()
    text = run_console(app, ["How do I re-ingest documents?", "/good", "Can I store transcripts in MySQL?", "1", "/why", "/quit"])
    assert "Sources:" in text and "Thanks for the feedback." in text
    assert "You could ask:" in text and "1. How do I use PostgreSQL for transcripts?" in text
    assert "> How do I use PostgreSQL for transcripts?" in text
    assert "status:" in text and "top1_similarity" in text
    turns = app.store.turns()
    assert [t.question for t in turns] == ["How do I re-ingest documents?", "Can I store transcripts in MySQL?",
                                           "How do I use PostgreSQL for transcripts?"]
    assert not turns[2].refused
    assert app.store.feedback_for(turns[0].id)[0].value == 1


@pytest.mark.slow
def test_reingest_admin_only(make_app: Callable[..., Any]) -> None:
    app = make_app()
    assert "Re-ingest done: added 0, updated 0, removed 0" in run_console(app, ["/reingest"])
    denied = run_console(app, ["/reingest", "/stats"], user="guest")
    assert "only admins can re-ingest" in denied and "only admins can see stats" in denied


def test_high_risk_answers_held_for_review(make_app: Callable[..., Any], base_config: Any) -> None:

    base = base_config
    cfg = base.changed(review__template_risk=0.0, review__hold_risk=0.0)
    app = make_app(config=cfg)
    text = run_console(app, ["How do I re-ingest documents?", "/review"])
    assert "passed to an admin for review" in text
    assert "[held] How do I re-ingest documents?" in text
    assert app.store.turns()[-1].state == "pending_review"
    assert "only admins can" in run_console(app, ["/review"], user="guest")


def test_making_a_console_chat_starts_nothing_until_it_runs(make_app: Callable[..., Any]) -> None:
    app = make_app()
    chat = ConsoleChat(app, stdin=io.StringIO("/quit\n"), stdout=io.StringIO())
    assert app.courier.delivery("console") is None and app.courier._thread is None  # no courier thread yet
    chat.run()
    assert app.courier.delivery("console") is chat and app.courier._thread is not None
