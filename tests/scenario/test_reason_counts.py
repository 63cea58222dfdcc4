"""Every reason code is counted apart wherever refusals are counted (docs/reason-codes.md): `/stats`
and its reply, the report's refusals by reason and the `groundbot_turns_total` metric; and an outage
(INDEX_UNAVAILABLE) or a bug (INTERNAL_ERROR) is never taken for a gap in the knowledge base."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from bot.cli.report import summarise
from bot.server.metrics import Metrics
from bot.services.commands import stats_reply
from core.catalogue import explain, say
from core.messages import ConversationKey, Decision
from core.reasons import Reason, State, Status
from storage.records.report_data import load
from storage.records.transcripts import SqlTranscriptStore

NOT_GAPS = (Reason.INDEX_UNAVAILABLE, Reason.INTERNAL_ERROR, Reason.DATABASE_UNAVAILABLE, Reason.INPUT_REJECTED,
            Reason.CHAT_NOT_SET_UP)


def refused(reason: Reason) -> Decision:
    question = f"What about {reason.lower().replace('_', ' ')}?"  # a topic of its own in the report's gaps
    return Decision(question=question, normalized_question=question, retrieval_query=question, answer="",
                    refused=True, refusal_reason=reason, refusal_message=say("refusal"),
                    explanation=explain(reason), status=Status.REFUSE, state=State.REFUSED, reasons=[reason],
                    checks_passed=[], checks_failed=[], scores={}, llm_called=False, sources=[], suggestions=[],
                    uncovered_claims=[], latency_ms={"total": 5.0}, index_version="1", config_hash="h",
                    language="en")


def test_every_reason_code_is_counted_apart(tmp_path: Path) -> None:
    store = SqlTranscriptStore(f"sqlite:///{(tmp_path / 'transcripts.db').as_posix()}")
    metrics = Metrics()
    # twice each: counted as gaps, an outage and a bug would top the gaps with the real one
    twice = (Reason.NO_MATCHING_SOURCE, *NOT_GAPS)
    decisions = [refused(reason) for reason in [*Reason, *twice]]
    for n, d in enumerate(decisions):
        turn_id, _ = store.record_turn(ConversationKey("console", f"c{n}"), "u", "", d, State.REFUSED)
        assert turn_id is not None
        metrics.observe(d)
    counts = {str(reason): 2 if reason in twice else 1 for reason in Reason}

    stats = store.stats()
    assert stats["refusals_by_reason"] == counts
    shown = stats_reply(stats).text
    assert all(f"{reason} {n}" in shown for reason, n in counts.items()), shown

    summary = summarise(load(store.engine), datetime.now(UTC))
    assert summary["refused_by_reason"] == counts
    assert [(g["count"], g["examples"]) for g in summary["gaps"] if g["count"] > 1] == [
        (2, [refused(Reason.NO_MATCHING_SOURCE).question] * 2)], summary["gaps"]
    gap_questions = {q for g in summary["gaps"] for q in g["examples"]}
    assert not gap_questions & {refused(r).question for r in NOT_GAPS}, summary["gaps"]

    turns = {reason: metrics.registry.get_sample_value("groundbot_turns_total",
                                                       {"outcome": "refused", "reason": reason})
             for reason in counts}
    assert turns == {reason: float(n) for reason, n in counts.items()}
