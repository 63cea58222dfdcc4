"""The passage reader with its real model (models/reader.onnx) in a real App."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bot.app import App
from bot.config import Config
from core import reasons
from core.messages import ConversationKey, Decision, Incoming
from models.reader import MODEL_FILE, OnnxReader

KB = """# Borrowing books at the Riverside Library

Members of the Riverside Library may borrow up to eight books at a time.
Borrowed books are due back after three weeks.

## The reading room

The reading room on the second floor is reserved for quiet study and opens at nine.
"""


def ask(app: App, text: str) -> Decision:
    return app.ask(Incoming(ConversationKey("console", "reader", text), "local", text))


def reading(base_config: Config, threshold: float) -> Config:
    return base_config.changed(reader__min_answer_probability=threshold)


@pytest.fixture
def library(tmp_path: Path) -> Path:
    (tmp_path / "kb").mkdir()
    (tmp_path / "kb" / "library.md").write_text(KB, encoding="utf-8")
    return tmp_path / "kb"


def test_model_ships_and_scores_each_chunk_whatever_else_it_reads() -> None:
    assert MODEL_FILE.is_file() and MODEL_FILE.stat().st_size <= 60_000_000
    reader = OnnxReader()
    q = "How many books may members borrow?"
    passages = ["Riverside Library: Members may borrow up to eight books at a time for three weeks.",
                "Riverside Library / The reading room: The reading room on the second floor is reserved for quiet study."]
    scores = reader.score(q, passages)
    assert all(0.0 <= p <= 1.0 for p in scores) and scores[0] > scores[1]
    assert reader.score(q, passages) == scores  # the same pairs, the same probabilities
    assert reader.score(q, passages[::-1]) == scores[::-1]  # and read in another order or alone
    assert reader.score(q, passages[1:]) == scores[1:] and reader.score(q, passages[:1]) == scores[:1]
    assert OnnxReader(threads=2).score(q, passages * 3) == scores * 3  # two read at once: the same probabilities
    assert reader.score(q, []) == []


def test_reader_in_the_pipeline_answers_reranks_and_refuses(make_app: Callable[..., Any], base_config: Config,
                                                           library: Path) -> None:
    app = make_app(config=base_config, empty=True)
    app.ingest([library])
    d = ask(app, "How many books may library members borrow at a time?")
    assert not d.refused and "eight books" in d.answer, (d.refusal_reason, d.explanation, d.scores)
    assert "answered_by_sources" in d.checks_passed and 0.0 < (d.scores["reader_best"] or 0.0) <= 1.0
    assert "read" in d.latency_ms
    strict = make_app(config=reading(base_config, 1.01), empty=True)  # no probability reaches it
    strict.ingest([library])
    d = ask(strict, "How many books may library members borrow at a time?")
    assert d.refused and d.refusal_reason == reasons.NOT_ANSWERED_BY_SOURCES and not d.llm_called
    assert "answered_by_sources" in d.checks_failed
