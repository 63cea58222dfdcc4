"""The answerability judge with its real model (storage/models/answerability.onnx) in a real App."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from bot.app import App
from bot.config import Config
from core import reasons
from core.messages import ConversationKey, Decision, Incoming
from core.settings import JudgeSettings
from storage.answer_judge import MODEL_FILE, OnnxAnswerJudge

KB = """# Borrowing books at the Riverside Library

Members of the Riverside Library may borrow up to eight books at a time.
Borrowed books are due back after three weeks.
"""


def judged(base_config: Config, threshold: float) -> Config:
    return replace(base_config, core=replace(base_config.core, judge=JudgeSettings(True, threshold, 3)))


def ask(app: App, text: str) -> Decision:
    return app.ask(Incoming(ConversationKey("console", "judge", text), "local", text))


@pytest.fixture
def library(tmp_path: Path) -> Path:
    (tmp_path / "kb").mkdir()
    (tmp_path / "kb" / "library.md").write_text(KB, encoding="utf-8")
    return tmp_path / "kb"


def test_model_ships_and_scores_each_passage_the_same_alone_or_with_others() -> None:
    assert MODEL_FILE.is_file() and MODEL_FILE.stat().st_size <= 60_000_000
    judge = OnnxAnswerJudge()
    q = "How many books may members borrow?"
    passages = ["Riverside Library: Members may borrow up to eight books at a time for three weeks.",
                "Riverside Library: The reading room on the second floor is reserved for quiet study."]
    together = judge.score(q, passages)
    alone = [judge.score(q, [p])[0] for p in passages]
    assert all(0.0 <= p <= 1.0 for p in together)
    # each pair is its own run: int8 activations are quantized per run, so batching moved scores
    assert together == alone
    assert judge.score(q, passages) == together
    assert judge.score(q, []) == []


def test_judge_in_the_pipeline_answers_and_refuses(make_app: Callable[..., Any], base_config: Config,
                                                   library: Path) -> None:
    app = make_app(config=judged(base_config, base_config.core.judge.min_answer_probability), empty=True)
    app.ingest([library])
    d = ask(app, "How many books may library members borrow at a time?")
    assert not d.refused and "eight books" in d.answer, (d.refusal_reason, d.explanation, d.scores)
    assert 0.0 < (d.scores["answer_probability"] or 0.0) <= 1.0
    strict = make_app(config=judged(base_config, 1.01), empty=True)  # no probability reaches it
    strict.ingest([library])
    d = ask(strict, "How many books may library members borrow at a time?")
    assert d.refused and d.refusal_reason == reasons.NOT_ANSWERED_BY_SOURCES and not d.llm_called
