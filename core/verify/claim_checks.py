"""The checks a claim must pass, in order, all of one shape.

`map_claim` first maps a claim to its best evidence window and scores its lexical support
(core/verify/features.py, core/verify/model.py); then every check in `CHECKS` reads the whole
answer (`AnswerContext`) and marks the claims it finds wanting, with a note that says why. The
notes are what the claim map shows as "missing", so each refusal explains itself. The claim
judge (core.ports.ClaimJudge) is the last check: the lexical ones stay in front of it because
they explain themselves.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from core.messages import ClaimRecord, Hit
from core.ports import ClaimJudge
from core.settings import VerifySettings
from core.text.lexicon import content_terms
from core.text.names import critical_tokens, unmatched_names
from core.text.normalize import normalize_text, words
from core.text.sentences import Claim
from core.verify.both_answers import check_both, pair
from core.verify.compare import check_comparison
from core.verify.evidence import (
    evidence_sentences,
    is_bare_polarity,
    is_polar,
    labels,
    support_passage,
    with_neighbours,
)
from core.verify.features import NEGATIONS, Sentence, claim_evidence, present
from core.verify.model import ClaimModel
from core.verify.placement import misplaced, out_of_context


@dataclass
class ClaimCheck:
    """One claim while the checks read it: its evidence windows and what the checks found so far
    (`record()` is what the decision keeps of it)."""

    claim: str
    citations: list[int]
    support: float
    evidence: list[str]
    evidence_chunks: list[int]
    missing: list[str]
    supported: bool
    features: dict[str, float]
    polar: bool = False  # a bare yes/no, checked through its question
    window: list[Sentence] = field(default_factory=list)
    sentences: list[Sentence] = field(default_factory=list)
    judge: float | None = None

    def fail(self, note: str) -> None:
        self.supported = False
        self.missing.append(note)

    def record(self) -> ClaimRecord:
        """The claim as the decision record keeps it (without the windows the checks read)."""
        return ClaimRecord(claim=self.claim, citations=self.citations, support=self.support, evidence=self.evidence,
                           evidence_chunks=self.evidence_chunks, missing=self.missing, supported=self.supported,
                           features=self.features, judge=self.judge)


@dataclass
class AnswerContext:
    """What every check reads: the question, the answer's mapped claims and their sources."""

    question: str
    claims: list[ClaimCheck]
    hits: Sequence[Hit]
    cited: list[int]  # the valid citations of the answer, or every hit when it cites none
    cfg: VerifySettings
    judge: ClaimJudge | None = None
    judge_floor: float = 0.5


Check = Callable[[AnswerContext], None]


def _polar_check(claim: Claim, citations: Sequence[int], question: str, sentences: list[Sentence]) -> ClaimCheck:
    """A bare "yes"/"no" is checked together with its question, whose names must all be in the
    evidence and whose terms must mostly be there."""
    ev = claim_evidence(question, question, sentences, 0, [])
    tokens: set[str] = set().union(*(s.tokens for s in sentences)) if sentences else set()
    missing = [t for t in critical_tokens(question) if not present(t, tokens)]
    coverage = ev.features["qcov"]
    return ClaimCheck(claim.text, list(citations), round(coverage, 4), [sentences[i].text for i in ev.window],
                      sorted({sentences[i].chunk for i in ev.window}), missing,
                      bool(sentences) and not missing and coverage >= 0.5,
                      {k: round(v, 4) for k, v in ev.features.items()}, polar=True,
                      window=[sentences[i] for i in ev.window], sentences=sentences)


def map_claim(claim: Claim, citations: Sequence[int], question: str, hits: Sequence[Hit], cfg: VerifySettings,
              model: ClaimModel) -> ClaimCheck:
    """Map one claim to its best evidence window and score how well the window supports it;
    numbers and names of the claim must be in the evidence."""
    sentences = evidence_sentences(hits, with_neighbours(hits, citations))
    if is_bare_polarity(claim.text):
        return _polar_check(claim, citations, question, sentences)
    ev = claim_evidence(claim.text, question, sentences, cfg.short_answer_words, critical_tokens(claim.text))
    prob = model.probability(ev.features) if sentences else 0.0
    # a claim its cited chunk holds word for word is stated there, however the chunk's sentences
    # split (a sentence that runs into a code block is one claim and two evidence sentences)
    supported = prob >= cfg.min_claim_support or _in_cited(claim.text, hits, citations)
    return ClaimCheck(claim.text, list(citations), round(prob, 4), [sentences[i].text for i in ev.window],
                      sorted({sentences[i].chunk for i in ev.window}), list(ev.missing),
                      bool(sentences) and supported and not ev.missing,
                      {k: round(v, 4) for k, v in ev.features.items()},
                      window=[sentences[i] for i in ev.window], sentences=sentences)


def _in_cited(claim: str, hits: Sequence[Hit], citations: Sequence[int]) -> bool:
    """The claim is a run of whole words of one of its cited chunks (case and punctuation aside)."""
    plain = _plain(claim, claim=True)
    return bool(plain.strip()) and any(plain in _plain(hits[n - 1].faq_answer or hits[n - 1].text)
                                       for n in citations if 1 <= n <= len(hits))


FACT_WORDS = 12  # the word guards read a claim this short; a longer one's meaning is the claim judge's


def _fact(claim: str) -> bool:
    """A short factoid claim, where an added "not" or "only" is the whole hallucination. In a long
    sentence they are part of its structure ("no fear of humans", "do not give notice"), so the
    two guards would reject more right long-form claims than they catch wrong ones
    (bench/results/guards.md), and the judge reads those claims whole."""
    return len(claim.split()) <= FACT_WORDS


def negation(ctx: AnswerContext) -> None:
    """A short claim that negates while its evidence states no negation, in reply to a question
    that asked for a fact rather than a yes or no ("X was not born in 1965" for "Who was born in
    1965?"). Negation words the question already holds ("No. 8") do not count."""
    asked = set(words(normalize_text(ctx.question)))
    for c in (c for c in ctx.claims if _fact(c.claim)):
        added = NEGATIONS.intersection(words(normalize_text(c.claim))) - asked
        if not c.polar and added and not any(s.negated for s in c.window) and not is_polar(ctx.question):
            c.fail("a negation its evidence does not state")


def names(ctx: AnswerContext) -> None:
    """Multi-word names must appear together in one evidence sentence (core/text/names.py).
    Only without a claim judge (Persian knowledge bases): with the judge, the claims it alone
    rejects are right ones; it catches no wrong one the judge misses (bench/results/guards.md)."""
    if ctx.judge is not None:
        return
    for c in ctx.claims:
        if not c.polar:
            for name in unmatched_names(c.claim, ctx.question, [s.text for s in c.sentences]):
                c.fail(name)


def anchored(ctx: AnswerContext) -> None:
    """A name or number the evidence holds, but not where it says what the claim says about it
    (core/verify/placement.py): the right passage's other name or number."""
    for c in ctx.claims:
        if c.polar:
            continue
        titles = labels(ctx.hits, c.citations or range(1, len(ctx.hits) + 1))
        placed = misplaced(c.claim, ctx.question, c.sentences, ctx.cfg.anchor_ratio, titles)
        near = out_of_context(c.claim, ctx.question, c.sentences, titles) if ctx.cfg.anchor_ratio > 0 else []
        for token in dict.fromkeys(placed + near):
            c.fail(f"'{token}' is in the sources, but not where they say what this claim says")


_RESTRICTIVE = frozenset(["only", "solely", "exclusively"])


def restriction(ctx: AnswerContext) -> None:
    """"Only X" claims more than "X": in a short claim the restriction must come from the evidence
    or the question."""
    asked = set(words(normalize_text(ctx.question)))
    for c in (c for c in ctx.claims if _fact(c.claim)):
        said = _RESTRICTIVE.intersection(words(normalize_text(c.claim)))
        if not c.polar and said and not said & asked and not any(said & s.tokens for s in c.sentences):
            c.fail("a restriction ('only') its evidence does not state")


def comparison(ctx: AnswerContext) -> None:
    """A claim that picks the option the evidence contradicts (core/verify/compare.py)."""
    sentences = [s.text for s in evidence_sentences(ctx.hits, ctx.cited)]
    verdict = check_comparison(ctx.question, " ".join(c.claim for c in ctx.claims), sentences)
    if verdict is None or verdict.agrees:
        return
    picked = set(content_terms(verdict.picked))
    for c in ctx.claims:
        if picked and len(picked & set(content_terms(c.claim))) / len(picked) >= 0.5:
            c.fail(verdict.note)


def both(ctx: AnswerContext) -> None:
    """A claim that affirms of both A and B what the evidence says of only one
    (core/verify/both_answers.py). A bare "yes" adds no words of its own; its question is checked."""
    if pair(ctx.question) is None:
        return
    sentences = [s.text for s in evidence_sentences(ctx.hits, ctx.cited)]
    for c in ctx.claims:
        if c.polar:
            continue
        verdict = check_both(ctx.question, c.claim, sentences)
        if verdict is not None and not verdict.supported:
            c.fail(verdict.note)


def answering(ctx: AnswerContext) -> None:
    """A claim whose every cited chunk the passage reader read as not answering the question
    (`min_source_answer_probability`): a true sentence of another question's passage ("Monte Carlo
    ... where the Monte Carlo Casino is located" for "What were the original casinos in Las
    Vegas?") is supported by its source and is no answer. A chunk the reader did not read does
    not count against a claim."""
    floor = ctx.cfg.min_source_answer_probability
    if floor <= 0:
        return
    for c in ctx.claims:
        read = _read(ctx.hits, c.citations)
        if read and all(p is not None and p < floor for p in read):
            c.fail(f"its source does not answer the question (passage reader {max(p or 0.0 for p in read):.2f} < {floor:.2f})")


def _read(hits: Sequence[Hit], chunks: Iterable[int]) -> list[float | None]:
    """The passage reader's probability of each numbered chunk (1-based; None: not read)."""
    return [hits[n - 1].answer_probability for n in chunks if 1 <= n <= len(hits)]


def judged(ctx: AnswerContext) -> None:
    """The claim judge: does the evidence state this claim, however it is worded? It reads the
    few sentences of the claim's cited chunks that say most about it (`support_passage`), so a
    paraphrase or a claim merged from two sentences is judged by meaning, and it catches the
    wrong name or number from the right passage, which every word check passes. With a judge,
    a claim the exact guards let through but that shares too few words with its evidence (a
    paraphrase) is supported when the judge is sure of it (min_paraphrase_probability); a claim
    worded like its evidence needs only the judge's floor, and a bare short answer the words."""
    if ctx.judge is None:
        return
    asked = [c for c in ctx.claims if not _copied(c, ctx.question, ctx.cfg, ctx.hits)]
    if not asked:
        return
    probs = ctx.judge.score(ctx.question, [(c.claim, _judge_evidence(c, ctx.hits)) for c in asked])
    for c, p in zip(asked, probs, strict=True):
        c.judge = round(p, 4)
        if p < ctx.judge_floor:
            c.fail(f"the evidence does not state this (claim judge {p:.2f} < {ctx.judge_floor:.2f})")
        elif not c.missing and c.sentences and p >= ctx.cfg.min_paraphrase_probability and _worded(c, ctx.cfg):
            c.supported = True  # stated in other words: the judge, not word overlap, decides


def _copied(c: ClaimCheck, question: str, cfg: VerifySettings, hits: Sequence[Hit]) -> bool:
    """A claim its evidence states word for word (whole words, case and punctuation aside) is not
    put to the judge when it is about the question: it holds at least `copied_question_share` of
    the question's content words, or its sentence is in a chunk the passage reader read as
    answering the question (`copied_answer_probability`). The judge weighs how a sentence answers
    its question and rejects many copied answer sentences of the right passage (HaluEval's); a
    copy about something else ("Which port does polling mode use?" answered "The default port is
    8443.") is still judged, and the exact checks apply to all."""
    if len(c.claim.split()) <= cfg.short_answer_words:
        return False
    claim = _plain(c.claim, claim=True)
    if not claim.strip() or claim not in _plain(" ".join(s.text for s in c.window)):
        return False
    if any(p is not None and p >= cfg.copied_answer_probability for p in _read(hits, (s.chunk for s in c.window))):
        return True
    asked = set(content_terms(question))
    return not asked or len(asked & set(content_terms(c.claim))) >= cfg.copied_question_share * len(asked)


_CONNECTIVES = frozenset(["also", "and", "but", "however", "additionally", "moreover", "furthermore", "so", "then"])


def _plain(text: str, *, claim: bool = False) -> str:
    """The text's words, space-separated and padded, so a copy matches whole words only; an
    apostrophe splits a word ("world's" and the tokenised "world 's" alike), and a claim's
    opening connective ("Also, ...") is no word of what it copies."""
    seq = words(normalize_text(text).replace("'", " ").replace("’", " "))
    while claim and len(seq) > 1 and seq[0] in _CONNECTIVES:
        seq = seq[1:]
    return f" {' '.join(seq)} "


def _worded(c: ClaimCheck, cfg: VerifySettings) -> bool:
    """A claim long enough to be worded differently from its evidence: a bare answer ("Texas",
    "the treatment") is either in the evidence or not, and the judge's yes to one is no proof."""
    return not c.polar and len(c.claim.split()) > cfg.short_answer_words


def _judge_evidence(c: ClaimCheck, hits: Sequence[Hit]) -> str:
    """What the judge reads for a claim: its title, then the sentences of its cited chunks (all
    retrieved chunks when it cites none) that say most about it."""
    chunks = c.citations or sorted({s.chunk for s in c.sentences})
    title = next((hits[n - 1].title for n in chunks if 1 <= n <= len(hits) and hits[n - 1].title), "")
    return support_passage(c.claim, [s.text for s in c.sentences], title)


CHECKS: tuple[Check, ...] = (negation, names, anchored, restriction, comparison, both, answering, judged)

