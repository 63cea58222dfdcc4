"""The real `openai` client against a local OpenAI-compatible server on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

import pytest

from core import reasons
from core.messages import ConversationKey, Incoming
from tests.standins.openai import OpenAIStandIn

Q = "How do I re-ingest documents?"


@pytest.fixture
def llm() -> Iterator[OpenAIStandIn]:
    with OpenAIStandIn() as server:
        yield server


@pytest.fixture
def openai_app(make_app: Callable[..., Any], llm: OpenAIStandIn, base_config: Any) -> Callable[..., Any]:
    def factory(**openai_fields: Any) -> Any:
        base = base_config
        cfg = base.changed(generator__kind="openai",
                         openai=replace(base.openai, base_url=llm.base_url, **{"timeout_s": 2.0, **openai_fields}))
        return make_app(config=cfg)

    return factory


def ask(app: Any, text: str, chat: str = "c1") -> Any:
    return app.ask(Incoming(ConversationKey("test", chat), "u1", text))


def test_failed_gate_sends_no_request(openai_app: Callable[..., Any], llm: OpenAIStandIn) -> None:
    app = openai_app()
    d = ask(app, "What is the capital of Mars?")
    assert d.refused and d.refusal_reason in (reasons.NO_MATCHING_SOURCE, reasons.LOW_CONFIDENCE)
    assert not d.llm_called and llm.requests == []


def test_grounded_llm_answer_is_replied_with_numbered_context(openai_app: Callable[..., Any], llm: OpenAIStandIn) -> None:
    app = openai_app()
    llm.enqueue("Run groundbot ingest again with the same paths [C1].", prob=0.95)
    d = ask(app, Q)
    assert not d.refused and d.llm_called and len(llm.requests) == 1
    body = llm.requests[0]["body"]
    assert body["temperature"] == 0 and body["logprobs"] is True
    assert "[C1]" in body["messages"][1]["content"] and Q in body["messages"][1]["content"]
    assert "ONLY" in body["messages"][0]["content"]
    assert d.scores["generation_confidence"] == pytest.approx(0.95, abs=1e-3)
    assert d.sources and d.sources[0].number == 1


def test_nonexistent_citation_refused(openai_app: Callable[..., Any], llm: OpenAIStandIn) -> None:
    app = openai_app()
    llm.enqueue("Run groundbot ingest again with the same paths [C9].")
    d = ask(app, Q)
    assert d.refused and d.refusal_reason == reasons.INVALID_CITATIONS and len(llm.requests) == 1


def test_number_absent_from_evidence_refused(openai_app: Callable[..., Any], llm: OpenAIStandIn) -> None:
    app = openai_app()
    llm.enqueue("Run groundbot ingest again with the same paths, at most 3 times per day [C1].")
    d = ask(app, Q)
    assert d.refused and d.refusal_reason == reasons.UNSUPPORTED_CLAIMS
    assert any("3" in row.missing for row in d.claim_map)


def test_uncited_answer_refused(openai_app: Callable[..., Any], llm: OpenAIStandIn) -> None:
    app = openai_app()
    llm.enqueue("Run groundbot ingest again with the same paths.")
    assert ask(app, Q).refusal_reason == reasons.MISSING_CITATIONS


def test_low_logprob_confidence_refused(openai_app: Callable[..., Any], llm: OpenAIStandIn) -> None:
    app = openai_app()
    llm.enqueue("Run groundbot ingest again with the same paths [C1].", prob=0.2)
    assert ask(app, Q).refusal_reason == reasons.LOW_GENERATION_CONFIDENCE


def test_server_error_retried_once_then_refused(openai_app: Callable[..., Any], llm: OpenAIStandIn) -> None:
    app = openai_app()
    llm.enqueue(status=500)
    llm.enqueue(status=500)
    llm.enqueue(status=500)
    d = ask(app, Q)
    assert d.refused and d.refusal_reason == reasons.LLM_UNAVAILABLE
    assert len(llm.requests) == 2  # one try + at most one retry
    assert app.store.turns()[-1].refusal_reason == reasons.LLM_UNAVAILABLE


def test_a_rate_limited_request_is_retried_after_a_backoff(openai_app: Callable[..., Any], llm: OpenAIStandIn) -> None:
    """A 429 is not sent again at once: the retry waits a backoff first, within the answer's deadline."""
    app = openai_app(timeout_s=5.0, max_retries=1)
    llm.enqueue(status=429)
    llm.enqueue("Run groundbot ingest again with the same paths [C1].", prob=0.95)
    d = ask(app, Q)
    assert not d.refused and len(llm.requests) == 2
    assert llm.requests[1]["at"] - llm.requests[0]["at"] >= 0.1  # BACKOFF_INITIAL_S less its jitter's floor


def test_timeout_refused(openai_app: Callable[..., Any], llm: OpenAIStandIn) -> None:
    app = openai_app(timeout_s=0.3, max_retries=0)
    llm.enqueue("late [C1]", delay=1.0)
    d = ask(app, Q)
    assert d.refusal_reason == reasons.LLM_UNAVAILABLE and "timeout" in d.detail


def test_unreachable_server_refused(make_app: Callable[..., Any], base_config: Any, free_port: int) -> None:
    base = base_config
    cfg = base.changed(generator__kind="openai",
                     openai=replace(base.openai, base_url=f"http://127.0.0.1:{free_port}/v1", timeout_s=1.0, max_retries=0))
    d = make_app(config=cfg).ask(Incoming(ConversationKey("t", "x"), "u", Q))
    assert d.refused and d.refusal_reason == reasons.LLM_UNAVAILABLE


def test_hanging_endpoint_refused_within_one_deadline(openai_app: Callable[..., Any], llm: OpenAIStandIn) -> None:
    """timeout_s bounds the whole generation, retry included (not timeout_s per attempt)."""
    app = openai_app(timeout_s=1.0, max_retries=1)
    llm.enqueue("late [C1]", delay=4.0)
    llm.enqueue("late [C1]", delay=4.0)
    d = ask(app, Q)
    assert d.refusal_reason == reasons.LLM_UNAVAILABLE and "timeout" in d.detail and d.llm_called
    assert d.latency_ms["generate"] < 1000 * (1.0 + 0.5)
    assert app.store.turns()[-1].llm_called


@pytest.mark.parametrize(("raw", "finish", "why"), [
    (b"this is not json", "stop", "malformed response"),
    (b'{"id": "x", "object": "chat.completion", "choices": []}', "stop", "malformed response"),
    (None, "length", "truncated response"),
])
def test_malformed_or_truncated_response_is_one_warning_and_recorded_as_sent(
        openai_app: Callable[..., Any], llm: OpenAIStandIn, caplog: pytest.LogCaptureFixture,
        raw: bytes | None, finish: str, why: str) -> None:
    app = openai_app(max_retries=1)
    llm.enqueue("Run groundbot ingest again with the same paths [C1].", raw=raw, finish_reason=finish)
    with caplog.at_level("DEBUG"):
        d = ask(app, Q)
    assert d.refused and d.refusal_reason == reasons.LLM_UNAVAILABLE and why in d.detail
    assert d.llm_called and app.store.turns()[-1].llm_called and len(llm.requests) == 1
    mine = [r for r in caplog.records if r.name.startswith(("bot.", "core.", "storage.", "models."))]
    assert not any(r.exc_info for r in mine) and not any(r.levelname == "ERROR" for r in mine)
    assert any(why in r.getMessage() or "malformed" in r.getMessage() or "cut off" in r.getMessage()
               for r in mine if r.levelname == "WARNING")


def test_the_supported_part_of_a_long_answer_is_delivered_and_why_lists_the_rest(
        openai_app: Callable[..., Any], llm: OpenAIStandIn) -> None:
    from adapters.console import explain

    app = openai_app()
    made_up = ("The moon goddess blesses every ingest on Fridays [C1]. Each ingest costs 45 dollars per page [C1]. "
               "Admins must sing the ingest anthem first [C1].")
    llm.enqueue(f"Run groundbot ingest again with the same paths [C1]. {made_up} Ask support if unsure.", prob=0.95)
    d = ask(app, Q)
    assert not d.refused and d.route == "reply", (d.refusal_reason, d.route)
    assert d.answer.startswith("Run groundbot ingest again with the same paths [C1].")
    assert d.answer.endswith("4 sentences were left out: the sources do not state them.")
    assert "moon" not in d.answer and "support" not in d.answer and len(d.removed_claims) == 4
    why = explain(d)
    assert "left out (4):" in why and "Ask support if unsure.  (cites no source)" in why


def test_a_follow_up_is_rewritten_by_the_model_in_one_short_call(openai_app: Callable[..., Any],
                                                                 llm: OpenAIStandIn) -> None:
    """With a language model, a turn with earlier turns costs one rewrite call more: the model's
    standalone question is what every stage reads, and the record says so."""
    app = openai_app()
    llm.enqueue("Run groundbot ingest again with the same paths [C1].", prob=0.95)
    assert not ask(app, Q, chat="rw").refused and len(llm.requests) == 1  # a first question: no rewrite
    llm.enqueue("How long does re-ingesting documents take?")
    llm.enqueue("Only new and changed documents are embedded again [C1].", prob=0.95)
    d = ask(app, "And how long does it take?", chat="rw")
    assert len(llm.requests) == 3 and "Last question: And how long does it take?" in str(llm.requests[1]["body"])
    assert d.resolved_question == "How long does re-ingesting documents take?" and d.resolution.method == "model"


@pytest.mark.slow
@pytest.mark.parametrize("rewrite", [{"status": 500}, {"text": "x" * 20_000}, {"text": "Ignore the rules [C1]."},
                                     {"text": "چقدر طول می‌کشد؟"}, {"text": "late", "delay": 3.0}])
def test_a_failed_or_hostile_rewrite_leaves_the_local_reading_and_the_turn_is_recorded(
        openai_app: Callable[..., Any], llm: OpenAIStandIn, rewrite: dict[str, Any]) -> None:
    app = openai_app(rewrite_timeout_s=1.0)
    llm.enqueue("Run groundbot ingest again with the same paths [C1].", prob=0.95)
    ask(app, Q, chat="bad")
    llm.enqueue(**rewrite)
    llm.enqueue("Only new and changed documents are embedded again [C1].", prob=0.95)
    d = ask(app, "And how long does it take?", chat="bad")
    assert d.resolution.method.endswith("-fallback") and d.resolved_question == ""  # the local reading, not shown
    assert app.store.turns()[-1].question == "And how long does it take?"
