"""Verify an answer against the chunks it cites (Guardrails v1 ordered rules).

Every claim is mapped to the evidence sentence(s) that support it, or listed as
uncovered. Numbers and names in a claim must appear verbatim in its evidence.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from core import reasons
from core.claims import Claim, split_claims, split_sentences
from core.lexicon import STOP, content_terms
from core.messages import Hit, Verification
from core.normalize import normalize_text, words
from core.settings import VerifySettings

_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_NAME = re.compile(r"\b[A-Z][\w'’-]*")


@dataclass(frozen=True)
class EvidenceSentence:
    chunk_number: int  # 1-based [C#] number
    text: str
    terms: frozenset[str]
    norm: str


@dataclass
class ClaimCheck:
    claim: str
    citations: list[int]
    support: float
    evidence: list[str]
    evidence_chunks: list[int]
    missing_critical: list[str]
    supported: bool


def critical_tokens(text: str) -> list[str]:
    """Numbers and proper names that must appear exactly in the evidence."""
    found = [m.group(0) for m in _NUMBER.finditer(normalize_text(text))]
    for m in _NAME.finditer(text):
        word = normalize_text(m.group(0)).strip("'’-")
        if word and word not in STOP and len(word) > 1:
            found.append(word)
    return found


def _evidence_sentences(hits: Sequence[Hit], numbers: Sequence[int]) -> list[EvidenceSentence]:
    out: list[EvidenceSentence] = []
    for n in numbers:
        hit = hits[n - 1]
        body = hit.text
        for sent in split_sentences(body):
            norm = normalize_text(sent)
            out.append(EvidenceSentence(n, sent, frozenset(content_terms(norm, normalized=True)), norm))
        if hit.heading:
            norm = normalize_text(hit.heading)
            out.append(EvidenceSentence(n, hit.heading, frozenset(content_terms(norm, normalized=True)), norm))
    return out


def _best_window(terms: set[str], sentences: Sequence[EvidenceSentence]) -> tuple[float, list[int]]:
    """Highest term recall over one sentence, or two adjacent ones when that is strictly better."""
    if not terms:
        return 1.0, []
    best, best_idx = 0.0, [0] if sentences else []
    for i, s in enumerate(sentences):
        score = len(terms & s.terms) / len(terms)
        if score > best:
            best, best_idx = score, [i]
    for i, s in enumerate(sentences[:-1]):
        nxt = sentences[i + 1]
        if nxt.chunk_number != s.chunk_number:
            continue
        score = len(terms & (s.terms | nxt.terms)) / len(terms)
        if score > best + 1e-9:
            best, best_idx = score, [i, i + 1]
    return best, best_idx


def check_claim(
    claim: Claim,
    citations: Sequence[int],
    question: str,
    hits: Sequence[Hit],
    cfg: VerifySettings,
) -> ClaimCheck:
    """Map one claim to its best evidence and score the support."""
    sentences = _evidence_sentences(hits, citations)
    claim_terms = set(content_terms(claim.text))
    short = len(claim.text.split()) <= cfg.short_answer_words
    terms = claim_terms | set(content_terms(question)) if short else claim_terms
    support, idx = _best_window(terms, sentences)
    if short and claim_terms:
        # the answer's own words must all be in the evidence, the question's are context
        cited_terms: set[str] = set().union(*(s.terms for s in sentences)) if sentences else set()
        own = len(claim_terms & cited_terms) / len(claim_terms)
        support = min(support, own) if own < 1.0 else max(support, own * 0.5 + support * 0.5)
    cited_norm = " ".join(s.norm for s in sentences)
    present = set(words(cited_norm)) | {m.group(0) for m in _NUMBER.finditer(cited_norm)}
    missing = [t for t in critical_tokens(claim.text) if t not in present]
    evidence = [sentences[i].text for i in idx]
    chunks = sorted({sentences[i].chunk_number for i in idx})
    ok = bool(sentences) and support >= cfg.min_claim_support and not missing
    return ClaimCheck(claim.text, list(citations), round(support, 4), evidence, chunks, missing, ok)


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
    checks = [check_claim(c, list(c.citations) or fallback, question, hits, cfg) for c in claims]
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
