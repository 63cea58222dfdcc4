"""Risk score parts, routing thresholds and the quoted-evidence template answer."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from pydantic import TypeAdapter

from core.catalogue import catalogue, languages, lists, say, say_each
from core.gate.chain import GateResult
from core.messages import ClaimRecord, Generation, Verification
from core.reasons import Status
from core.settings import ReviewSettings, VerifySettings
from core.turn.risk import Route, assess, route, template_answer
from tests.unit.fakes import hit


def claims(rows: list[dict[str, object]]) -> list[ClaimRecord]:
    return TypeAdapter(list[ClaimRecord]).validate_python(rows)

CFG = VerifySettings()


def row(claim: str, support: float, supported: bool = True, evidence: tuple[str, ...] = (), chunks: tuple[int, ...] = (1,)) -> Any:
    return {"claim": claim, "citations": list(chunks), "support": support, "evidence": list(evidence),
            "evidence_chunks": list(chunks), "missing": [], "supported": supported, "features": {}}


def test_a_certain_answer_has_low_risk_and_a_shaky_one_high() -> None:
    sure = [row("the webhook rejects requests without the secret", 1.0)]
    v = Verification(status=Status.PASS, total_claims=1, supported_claims=1, claim_map=sure)
    low = assess(v, None, Generation("x [C1]", True, confidence=0.99), claims(sure), CFG)
    shaky = [row("The webhook listens on port 8443", 0.72), row("It was written in 1999 by Ada", 0.1, supported=False)]
    w = Verification(status=Status.WARN, total_claims=2, supported_claims=1, uncovered_claims=["It was written in 1999 by Ada"],
                     claim_map=shaky)
    gate = GateResult(warnings=["keyword_coverage"])
    high = assess(w, gate, Generation("y", True, confidence=0.4), claims(shaky), CFG)
    assert low.score < 0.05 and high.score > 0.75
    assert high.parts["uncovered_claims"] == 0.5 and high.parts["warn_status"] == 1.0
    assert high.parts["numbers_and_names"] == 1.0 and high.parts["keyword_coverage_warning"] == 1.0
    assert high.parts["generation_doubt"] == 0.6 and 0.9 < high.parts["support_margin"] <= 1.0
    assert set(low.parts) == set(high.parts)


def test_parts_without_a_measure_are_left_out() -> None:
    rows = [row("the ingest command re-embeds changed documents", 0.85)]
    v = Verification(status=Status.PASS, total_claims=1, supported_claims=1, claim_map=rows)
    r = assess(v, None, Generation("x", False), claims(rows), CFG)
    assert "generation_doubt" not in r.parts
    assert r.score == round(0.20 * r.parts["support_margin"] / 0.85, 4)
    faq = assess(v, None, Generation("x", False, faq=True), claims(rows), CFG)
    assert faq.parts["generation_doubt"] == 0.0


def test_routing_thresholds() -> None:
    cfg = ReviewSettings(template_risk=0.3, hold_risk=0.6)
    assert [route(x, cfg) for x in (0.0, 0.29, 0.3, 0.59, 0.6, 1.0)] == [
        Route.REPLY, Route.REPLY, Route.TEMPLATE, Route.TEMPLATE, Route.HOLD, Route.HOLD]
    assert route(0.99, replace(cfg, hold_risk=1.01)) == Route.TEMPLATE


def test_template_quotes_evidence_of_supported_claims_verbatim() -> None:
    hits = [hit("Intro. The webhook listens on port 8443. It rejects bad tokens.", n=0),
            hit("Slack answers go in the thread.", n=1)]
    rows = [row("webhook port is 8443", 0.8, evidence=("The webhook listens on port 8443.",), chunks=(1,)),
            row("answers in thread", 0.9, evidence=("Slack answers go in the thread.",), chunks=(2,)),
            row("made up", 0.1, supported=False, evidence=("It rejects bad tokens.",), chunks=(1,))]
    text = template_answer(claims(rows), hits, "en")
    assert text.splitlines() == [say("template_header", "en"), "> “The webhook listens on port 8443.” [C1]",
                                 "> “Slack answers go in the thread.” [C2]"]
    assert template_answer(claims(rows), hits, "fa").startswith(say("template_header", "fa"))
    assert template_answer(claims(rows[2:]), hits, "en") == ""


def test_catalogues_have_the_same_keys_and_placeholders() -> None:
    import string

    en = catalogue("en")
    assert languages() == ["en", "fa"]
    for lang in languages():
        other = catalogue(lang)
        assert set(other) == set(en), lang
        for key, text in other.items():
            fields = {f for _, f, _, _ in string.Formatter().parse(text) if f}
            assert fields == {f for _, f, _, _ in string.Formatter().parse(en[key]) if f}, (lang, key)
        assert {k: len(v) for k, v in lists(lang).items()} == {k: len(v) for k, v in lists("en").items()}, lang


def test_a_catalogue_list_is_read_as_a_list_not_split_by_its_callers() -> None:
    assert say_each("working_steps", "en")[0] == "Searching the knowledge base…" and len(say_each("working_steps")) == 3
    assert say_each("working_steps", "de") == say_each("working_steps", "en")  # no German catalogue: English
    assert "working_steps" not in catalogue("en") and all("|" not in step for step in say_each("working_steps", "fa"))


def test_the_claim_judge_doubt_of_the_weakest_claim_is_a_part() -> None:
    judged = [row("Paris is the capital", 0.9) | {"judge": 0.93}, row("It has 2 million people", 0.9) | {"judge": 0.2}]
    v = Verification(status=Status.PASS, total_claims=2, supported_claims=2, claim_map=judged)
    doubted = assess(v, None, Generation("x [C1]", True), claims(judged), CFG)
    assert doubted.parts["judge_doubt"] == 0.8
    trusted = [dict(r, judge=0.95) for r in judged]
    sure = assess(v, None, Generation("x [C1]", True), claims(trusted), CFG)
    assert sure.parts["judge_doubt"] == 0.05 and sure.score < doubted.score - 0.4
    unjudged = [row("Paris is the capital", 0.9)]
    assert "judge_doubt" not in assess(v, None, Generation("x", False), claims(unjudged), CFG).parts


def test_the_defaults_are_the_ones_chosen_on_dev() -> None:
    """core/turn/risk.py and core/settings.py carry what `bench.tuning.routing --choose` picked on a dev split."""
    import json
    from pathlib import Path

    from core.turn.risk import WEIGHTS

    choice = json.loads((Path(__file__).resolve().parents[2] / "bench/results/routing_choice.json").read_text())
    assert choice["split"].startswith("dev")
    d = ReviewSettings()
    assert (WEIGHTS["judge_doubt"], d.template_risk, d.hold_risk) == (
        choice["judge_weight"], choice["template_risk"], choice["hold_risk"])
