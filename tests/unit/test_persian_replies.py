"""What a Persian asker reads, as each adapter renders it without a network: the refusal of every
reason code (its reason line, suggestions and buttons, a follow-up's reading, a picked
suggestion's question) and a long answer spread over messages, in Persian but for the reason code.
tests/scenario/test_persian.py drives the same over the real platforms' libraries."""

from __future__ import annotations

import re
from typing import Any

import pytest

from adapters.slack.rendering import MAX_BLOCKS, render_decision
from adapters.telegram.rendering import decision_reply
from core.catalogue import explain, say
from core.messages import Decision, Source, Suggestion
from core.reasons import Reason, State, Status
from core.render import render_text

ASKED = "چگونه گذرنامه بگیرم؟"
READ_AS = "برای گرفتن گذرنامه چه مدارکی لازم است؟"
SUGGESTED = [Suggestion(11, "کتابخانه چه ساعتی باز است؟"), Suggestion(12, "هزینه عضویت سالانه چقدر است؟")]
_NOT_PROSE = re.compile(r"\[`?[A-Z_]+`?\]|`[A-Z_]+`|<[@!#][^>]*>")  # the reason code; Slack's tags of people


def english_in(text: str) -> list[str]:
    """The Latin-script words of what the asker reads, the reason code and tags of people left out."""
    return re.findall(r"[A-Za-z]+", _NOT_PROSE.sub(" ", text))


def decision(**fields: Any) -> Decision:
    base: dict[str, Any] = dict(
        question=ASKED, normalized_question=ASKED, retrieval_query=ASKED, answer="", refused=True,
        refusal_reason="", refusal_message=say("refusal", "fa"), explanation="", status=Status.REFUSE,
        state=State.REFUSED, reasons=[], checks_passed=[], checks_failed=[], scores={}, llm_called=False,
        sources=[], suggestions=SUGGESTED, uncovered_claims=[], latency_ms={}, index_version="1",
        config_hash="h", language="fa", turn_id=7, resolved_question=READ_AS)
    return Decision(**{**base, **fields})


def slack_texts(node: Any) -> list[str]:
    """Every text a block shows (sections, context, button labels), never a button's value."""
    if isinstance(node, dict):
        own = [str(node["text"])] if node.get("type") in ("plain_text", "mrkdwn") else []
        return own + [t for k, v in node.items() if k != "value" for t in slack_texts(v)]
    if isinstance(node, list):
        return [t for v in node for t in slack_texts(v)]
    return []


@pytest.mark.parametrize("reason", list(Reason))
def test_a_persian_refusal_reads_persian_on_every_adapter(reason: Reason) -> None:
    d = decision(refusal_reason=reason, reasons=[reason], explanation=explain(reason, "fa"))
    console = render_text(d)
    text, markup = decision_reply(d, picked=True, escalate=True)
    labels = [b.text for row in (markup.inline_keyboard if markup else ()) for b in row]
    slack = render_decision(d, picked_by="UALICE01", escalate=True)
    shown = {"console": console, "telegram": "\n".join([text, *labels]),
             "slack": "\n".join(t for m in slack for t in [m.text, *slack_texts(m.blocks)])}
    for adapter, words in shown.items():
        assert READ_AS in words and f"{reason}" in words, (adapter, words)  # the reading and the code are shown
        assert english_in(words) == [], (adapter, words)


def test_a_long_persian_answer_continues_in_persian_on_slack() -> None:
    answer = "\n\n".join("پاسخ " * 580 for _ in range(60)) + " [C1]"
    src = Source(number=1, doc_id="hours.md", title="ساعت کار", url="https://library.example/hours")
    parts = render_decision(decision(refused=False, answer=answer, refusal_message="", status=Status.PASS,
                                     state=State.REPLIED, sources=[src], suggestions=[]))
    assert len(parts) == 2 and sum(len(m.blocks) for m in parts) > MAX_BLOCKS
    assert parts[1].text == say("continued", "fa")
    shown = "\n".join(t for m in parts for t in [m.text, *slack_texts(m.blocks)])
    assert english_in(shown.replace(src.url, " ")) == [], shown[-500:]


def test_the_slack_greeting_speaks_the_language_of_the_prompts_it_offers() -> None:
    from adapters.slack.rendering import greeting

    persian = greeting([s.text for s in SUGGESTED])
    assert persian.text == say("greeting", "fa") and english_in(persian.text) == []
    assert greeting(["How do I ingest documents?"]).text == say("greeting", "en")
    assert greeting([]).text == say("greeting_empty", "en")
