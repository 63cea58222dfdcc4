"""Verify an answer against the chunks it cites (Guardrails v1 ordered rules).

Every claim is mapped to the evidence sentence(s) that support it, or listed as
uncovered. Numbers and names in a claim must appear verbatim in its evidence.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from core import reasons
from core.both import check_both, pair
from core.claim_features import NEGATIONS, Sentence, claim_evidence, make_sentence, present
from core.claim_model import ClaimModel, default_model
from core.claims import Claim, split_claims, split_sentences
from core.compare import check_comparison
from core.lexicon import AUXILIARIES, STOP, content_terms
from core.messages import Hit, Verification
from core.names import unmatched_names
from core.normalize import normalize_text, words
from core.settings import VerifySettings

_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_NAME = re.compile(r"\b[A-Z][\w'’-]*")


@dataclass
class ClaimCheck:
    claim: str
    citations: list[int]
    support: float
    evidence: list[str]
    evidence_chunks: list[int]
    missing_critical: list[str]
    supported: bool
    features: dict[str, float]


_SENT_START = re.compile(r"(?:^|[.!?:]\s+|\n\s*)$")


def critical_tokens(text: str) -> list[str]:
    """Numbers and proper names that must appear exactly in the evidence.

    A capitalised word that merely starts a sentence ("Put the token ...") is not taken
    for a name unless the next word is capitalised too ("Matt Damon") or it is an acronym.
    """
    found = [m.group(0) for m in _NUMBER.finditer(normalize_text(text))]
    for m in _NAME.finditer(text):
        raw = m.group(0)
        word = normalize_text(raw).strip("'’-")
        if not word or word in STOP or len(word) <= 1:
            continue
        if _SENT_START.search(text[: m.start()]) and raw[1:].islower():
            rest = text[m.end() :].lstrip()
            if not rest[:1].isupper():
                continue
        found.append(word)
    return found


def evidence_sentences(hits: Sequence[Hit], numbers: Sequence[int]) -> list[Sentence]:
    """Sentences (and headings) of the cited chunks, in order."""
    out: list[Sentence] = []
    for n in numbers:
        hit = hits[n - 1]
        out.extend(make_sentence(n, sent) for sent in split_sentences(hit.text))
        if hit.heading:
            out.append(make_sentence(n, hit.heading))
    return out


_POLARITY = re.compile(r"^(yes|no|بله|آری|خیر|نه)[.!]?$", re.IGNORECASE)
_WH_WORDS = frozenset(["who", "whom", "whose", "what", "which", "where", "when", "why", "how",
                       "چه", "چی", "کجا", "کی", "چرا", "چگونه", "چطور", "کدام", "چند"])


_ASKS_FOR = frozenset(["name", "list", "give", "identify", "describe", "explain", "tell", "find"])


def is_polar(question: str) -> bool:
    """A yes/no question: it opens with an auxiliary ("Is ...", "Did ..."), or asks no wh-word
    and is not a request for something ("Name the member of ...")."""
    tokens = words(normalize_text(question))
    if tokens[:1] and tokens[0] in AUXILIARIES:
        return True
    return not _WH_WORDS.intersection(tokens) and not (tokens[:1] and tokens[0] in _ASKS_FOR)


def negation_unsupported(claim: str, question: str, window: Sequence[Sentence]) -> bool:
    """A claim that negates while its evidence states no negation, in reply to a question that
    asked for a fact rather than a yes or no ("X was not born in 1965" for "Who was born in
    1965?"): the evidence does not say what the claim denies, and the claim answers nothing.
    Negation words the question already holds ("No. 8", "which was never ...") do not count."""
    asked = set(words(normalize_text(question)))
    added = NEGATIONS.intersection(words(normalize_text(claim))) - asked
    return bool(added) and not any(s.negated for s in window) and not is_polar(question)


_RESTRICTIVE = frozenset(["only", "solely", "exclusively"])


def restriction_unsupported(claim: str, question: str, sentences: Sequence[Sentence]) -> bool:
    """"Only X" claims more than "X": the restriction must come from the evidence (or the
    question), or the claim denies everything else on its own authority."""
    said = _RESTRICTIVE.intersection(words(normalize_text(claim)))
    if not said or said & set(words(normalize_text(question))):
        return False
    return not any(said & s.tokens for s in sentences)


def _check_polarity(claim: Claim, citations: Sequence[int], question: str, sentences: Sequence[Sentence]) -> ClaimCheck:
    """A bare "yes"/"no" has no words of its own to support: it is checked together with its
    question, whose names must all be in the evidence and whose terms must mostly be there."""
    ev = claim_evidence(question, question, sentences, 0, [])
    tokens: set[str] = set().union(*(s.tokens for s in sentences)) if sentences else set()
    missing = [t for t in critical_tokens(question) if not present(t, tokens)]
    coverage = ev.features["qcov"]
    ok = bool(sentences) and not missing and coverage >= 0.5
    return ClaimCheck(claim.text, list(citations), round(coverage, 4), [sentences[i].text for i in ev.window],
                      sorted({sentences[i].chunk for i in ev.window}), missing, ok,
                      {k: round(v, 4) for k, v in ev.features.items()})


def check_claim(
    claim: Claim,
    citations: Sequence[int],
    question: str,
    hits: Sequence[Hit],
    cfg: VerifySettings,
    model: ClaimModel | None = None,
) -> ClaimCheck:
    """Map one claim to its best evidence window and score how well it is supported."""
    sentences = evidence_sentences(hits, citations)
    if _POLARITY.match(claim.text.strip()):
        return _check_polarity(claim, citations, question, sentences)
    ev = claim_evidence(claim.text, question, sentences, cfg.short_answer_words, critical_tokens(claim.text))
    prob = (model or default_model()).probability(ev.features) if sentences else 0.0
    missing = list(ev.missing)
    if negation_unsupported(claim.text, question, [sentences[i] for i in ev.window]):
        missing.append("a negation its evidence does not state")
    missing.extend(unmatched_names(claim.text, question, [s.text for s in sentences]))
    if restriction_unsupported(claim.text, question, sentences):
        missing.append("a restriction ('only') its evidence does not state")
    ok = bool(sentences) and prob >= cfg.min_claim_support and not missing
    return ClaimCheck(
        claim.text, list(citations), round(prob, 4), [sentences[i].text for i in ev.window],
        sorted({sentences[i].chunk for i in ev.window}), missing, ok,
        {k: round(v, 4) for k, v in ev.features.items()},
    )


def _apply_comparison(question: str, claims: Sequence[Claim], checks: list[ClaimCheck], hits: Sequence[Hit],
                      cited: Sequence[int]) -> None:
    """A claim that picks the option the evidence contradicts (core/compare.py) is not covered."""
    sentences = [s.text for s in evidence_sentences(hits, cited)]
    verdict = check_comparison(question, " ".join(c.text for c in claims), sentences)
    if verdict is None or verdict.agrees:
        return
    picked = set(content_terms(verdict.picked))
    note = verdict.note
    for check in checks:
        if picked and len(picked & set(content_terms(check.claim))) / len(picked) >= 0.5:
            check.supported = False
            check.missing_critical.append(note)


def _apply_both(question: str, checks: list[ClaimCheck], hits: Sequence[Hit], cited: Sequence[int]) -> None:
    """A claim that affirms of both A and B what the evidence says of only one (core/both.py) is
    not covered. A bare "yes" adds no words of its own; its question is checked instead."""
    if pair(question) is None:
        return
    sentences = [s.text for s in evidence_sentences(hits, cited)]
    for check in checks:
        if _POLARITY.match(check.claim.strip()):
            continue
        verdict = check_both(question, check.claim, sentences)
        if verdict is not None and not verdict.supported:
            check.supported = False
            check.missing_critical.append(verdict.note)


def verify_answer(
    answer: str,
    question: str,
    hits: Sequence[Hit],
    cfg: VerifySettings,
) -> Verification:
    """Decide PASS / WARN / REFUSE for an answer citing the numbered `hits`."""
    claims = split_claims(answer)
    result = Verification(status="REFUSE", total_claims=len(claims))
    if not claims:
        result.reasons = [reasons.UNSUPPORTED_CLAIMS]
        result.checks_failed.append("has_claims")
        return result
    result.checks_passed.append("has_claims")
    all_cites = sorted({c for claim in claims for c in claim.citations})
    invalid = [c for c in all_cites if c < 1 or c > len(hits)]
    valid_cites = [c for c in all_cites if 1 <= c <= len(hits)]
    cited_claims = sum(1 for claim in claims if claim.citations)
    result.citation_density = round(cited_claims / len(claims), 4)

    if not all_cites and cfg.require_citations:
        result.reasons = [reasons.MISSING_CITATIONS]
        result.checks_failed.append("has_citations")
        return result
    if invalid:
        result.reasons = [reasons.INVALID_CITATIONS]
        result.checks_failed.append("citations_valid")
        result.uncovered_claims = [c.text for c in claims if any(n in invalid for n in c.citations)]
        return result
    result.checks_passed.append("citations_valid")

    fallback = valid_cites or list(range(1, len(hits) + 1))
    model = default_model()
    checks = [check_claim(c, list(c.citations) or fallback, question, hits, cfg, model) for c in claims]
    _apply_comparison(question, claims, checks, hits, valid_cites or list(range(1, len(hits) + 1)))
    _apply_both(question, checks, hits, valid_cites or list(range(1, len(hits) + 1)))
    supported = [c for c in checks if c.supported]
    uncovered = [c for c in checks if not c.supported]
    result.supported_claims = len(supported)
    result.uncovered_claims = [c.claim for c in uncovered]
    result.grounding_score = round(sum(c.support for c in checks) / len(checks), 4)
    result.claim_map = [
        {
            "claim": c.claim,
            "citations": c.citations,
            "support": c.support,
            "evidence": c.evidence,
            "evidence_chunks": c.evidence_chunks,
            "missing": c.missing_critical,
            "supported": c.supported,
            "features": c.features,
        }
        for c in checks
    ]
    if not supported:
        result.reasons = [reasons.UNSUPPORTED_CLAIMS]
        result.checks_failed.append("claim_mapping")
        return result
    result.checks_passed.append("claim_mapping")
    ratio = len(uncovered) / len(checks)
    if len(uncovered) > cfg.max_uncovered_claims or ratio > cfg.max_uncovered_ratio:
        result.reasons = [reasons.UNSUPPORTED_CLAIMS]
        result.checks_failed.append("uncovered_limit")
        return result
    result.checks_passed.append("uncovered_limit")
    result.status = "PASS"
    if result.citation_density < cfg.min_citation_density:
        result.status = "WARN"
        result.reasons.append(reasons.MISSING_CITATIONS)
        result.checks_failed.append("citation_density(warn)")
    else:
        result.checks_passed.append("citation_density")
    if uncovered:
        result.status = "WARN"
        result.reasons.append(reasons.UNSUPPORTED_CLAIMS)
        result.checks_failed.append("all_claims_covered(warn)")
    else:
        result.checks_passed.append("all_claims_covered")
    return result
