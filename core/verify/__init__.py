"""Verify an answer against the chunks it cites (the Guardrails rules, in order).

Every claim is mapped to the evidence sentence(s) that support it, or listed as uncovered;
numbers and names in a claim must appear verbatim in its evidence. When most of an answer is
supported, the unsupported claims are left out of it (`kept_answer`, `removed_claims`) rather
than the whole answer refused. The package holds one
concern a module: evidence (where a claim's evidence comes from), features and model (lexical
support), placement (names and numbers where the evidence puts them), compare and both_answers
(comparison questions), claim_checks (what a claim must pass, in order; the claim map's rows
are core.messages.ClaimRecord), rules (what decides PASS / WARN / REFUSE).
"""

from __future__ import annotations

from collections.abc import Sequence

from core.messages import Hit, Verification
from core.ports import ClaimJudge
from core.reasons import Reason, Status
from core.settings import VerifySettings
from core.text.names import critical_tokens
from core.text.sentences import split_claims
from core.verify.claim_checks import ClaimCheck
from core.verify.evidence import evidence_sentences, is_polar
from core.verify.rules import CITATION_RULES, CLAIM_RULES, Draft, Rule

__all__ = ["ClaimCheck", "critical_tokens", "evidence_sentences", "is_polar", "verify_answer"]


def _record_claims(result: Verification, draft: Draft) -> None:
    checks = draft.checks
    result.supported_claims = sum(1 for c in checks if c.supported)
    result.uncovered_claims = [c.claim for c in checks if not c.supported]
    result.grounding_score = round(sum(c.support for c in checks) / len(checks), 4)
    result.claim_map = [c.record() for c in checks]


def verify_answer(
    answer: str,
    question: str,
    hits: Sequence[Hit],
    cfg: VerifySettings,
    judge: ClaimJudge | None = None,
    judge_floor: float = 0.5,
) -> Verification:
    """Decide PASS / WARN / REFUSE for an answer citing the numbered `hits`; with a claim judge,
    every claim must also be stated by its evidence as the answer (probability >= judge_floor)."""
    draft = Draft(question, split_claims(answer), hits, cfg, judge, judge_floor)
    result = Verification(status=Status.REFUSE, total_claims=len(draft.claims), citation_density=draft.citation_density)
    warnings: list[Reason] = []
    if _refuses(result, draft, CITATION_RULES, warnings):
        return result
    _record_claims(result, draft)  # the claims mapped to their evidence, which the rules below read
    if _refuses(result, draft, CLAIM_RULES, warnings):
        return result
    result.status = Status.WARN if warnings else Status.PASS
    result.reasons = warnings
    if draft.uncovered:  # prune: the supported claims as written, in order, without the others
        result.kept_answer = " ".join(c.raw for c, check in zip(draft.claims, draft.checks, strict=True) if check.supported)
        result.removed_claims = [c.claim for c in draft.uncovered]
    return result


def _refuses(result: Verification, draft: Draft, rules: Sequence[Rule], warnings: list[Reason]) -> bool:
    """Run `rules` in order, each passed or failed check in `result` and each warning's reason in
    `warnings`; True when one refuses (its reason, and the claims it names, then in `result`)."""
    for rule in rules:
        verdict = rule(draft)
        if verdict is None:
            result.checks_passed.append(rule.__name__)
        elif verdict.status == Status.WARN:
            warnings.append(verdict.reason)
            result.checks_failed.append(f"{rule.__name__}(warn)")
        else:
            result.reasons = [verdict.reason]
            result.checks_failed.append(rule.__name__)
            if verdict.uncovered:
                result.uncovered_claims = list(verdict.uncovered)
            return True
    return False
