"""The default generator: no LLM, answers with cited sentences from the sources.

An FAQ match returns its stored answer verbatim; otherwise the sentences that
share the most (idf-weighted) content words with the question are quoted, each
with its [C#] citation, in the order they appear in the sources. Once the passage
reader has read the chunks, they come from one section of the chunks it trusts:
the one the best-matching sentence stands in (with its subsections, or under the
heading it is a subsection of, on the same page), quoted in the page's order. A
sentence that says back the asker's words or error line, an error or log line, or
a bare code fragment is never quoted (core/generate/quotable.py).

Quoting is stricter than the gates: an LLM answer is checked claim by claim against
the evidence, but a quoted sentence is evidence by construction, so the guards against
quoting a near miss are how close the sources are to the question (unless the best chunk
reaches `min_quote_similarity`, nothing is quoted) and, when the passage reader has read the
chunks (core/gate/passage_reading.py), its verdict: only chunks it trusts (`trust`) are quoted from, and
whether the sources answer at all was decided before generation.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

from core import reasons
from core.gate.passage_reading import trusted, was_read
from core.gate.verbatim import verbatim_faq, verbatim_section
from core.generate.quotable import quotable
from core.messages import Generation, Hit, HitKind
from core.settings import CoreSettings, ExtractiveSettings, Mode, for_mode
from core.text.citations import marker
from core.text.lexicon import content_terms
from core.text.sentences import split_sentences

RELATIVE_FLOOR = 0.4  # a further sentence is quoted only if it scores at least this share of the best one
RANK_PENALTY = 0.02  # per retrieval rank: of two equally matching sentences, the better-ranked chunk's wins
Candidate = tuple[float, int, int, str]  # lexical score, chunk number (1-based), sentence position, sentence
Row = tuple[int, int, str, set[str]]  # chunk number (1-based), sentence position, sentence, its content words
SECTION_STRIDE = 10_000  # one section's sentences are ordered by chunk position, then place in the chunk


class ExtractiveGenerator:
    """Selects and cites the sentences that answer the question."""

    name = "extractive"
    mode = Mode.QUOTE  # no remote model: cheap enough to check that a suggestion is answered (core/turn/pipeline.py)

    def __init__(self, cfg: ExtractiveSettings, trust: float = 0.0) -> None:
        self.cfg = cfg
        self.trust = trust  # a chunk the passage reader read is quoted from only with at least this probability

    @classmethod
    def from_settings(cls, settings: CoreSettings) -> ExtractiveGenerator:
        """The generator of quote-mode settings: it trusts what the reader's floor lets through."""
        quote = for_mode(settings, Mode.QUOTE)
        return cls(quote.extractive, trust=quote.reader.min_answer_probability)

    def generate(self, question: str, hits: Sequence[Hit], reading: str = "") -> Generation:
        """Quotes the sentences that answer, chosen by the words of the question's reading (the
        question itself, or it with the earlier words it leans on); the names and numbers held to
        the chunks are the question's own."""
        if not hits:
            return Generation(text="", llm_called=False)
        verbatim = self._verbatim(question, hits)
        if verbatim is not None:
            return verbatim
        q_terms = set(content_terms(reading or question))
        read = was_read(hits)
        rows = self._rows(hits, read)
        if not rows or not q_terms:
            return Generation(text="", llm_called=False)
        df: Counter[str] = Counter()
        for _, _, _, terms in rows:
            df.update(terms)
        total = len(rows)

        def idf(t: str) -> float:
            return math.log(1.0 + total / (1.0 + df.get(t, 0)))

        # a long question (what the asker tried, an error line, then the ask) is not diluted by its
        # length: a sentence's share is counted against the question's `ask_terms` rarest words
        q_weight = sum(sorted((idf(t) for t in q_terms), reverse=True)[: self.cfg.ask_terms]) or 1.0
        scored: list[Candidate] = []
        for n, pos, sent, terms in rows:
            if not quotable(sent, question):
                continue
            overlap = sum(idf(t) for t in q_terms & terms) / q_weight
            probability = hits[n - 1].answer_probability
            prior = hits[n - 1].similarity if probability is None else probability
            score = overlap * (0.75 + 0.25 * prior) - RANK_PENALTY * (n - 1)
            scored.append((score, n, pos, sent))
        scored.sort(key=lambda r: (-r[0], r[1], r[2]))
        if read and scored:
            scored = _one_section(scored, hits)
        chosen = [r for r in scored[: self.cfg.max_sentences] if r[0] >= self.cfg.min_sentence_score]
        if not chosen:
            return self._paraphrased_heading(question, hits, read) or Generation(text="", llm_called=False)
        best = chosen[0][0]
        return _quote([r for r in chosen if r[0] >= best * RELATIVE_FLOOR], in_section=read)

    def _rows(self, hits: Sequence[Hit], read: bool) -> list[Row]:
        """The sentences of every chunk it may quote from."""
        rows: list[Row] = []
        for n, hit in enumerate(hits, start=1):
            if not trusted(hit, self.trust, read):
                continue
            body = hit.faq_answer if hit.kind == HitKind.FAQ and hit.faq_answer else hit.text
            rows.extend((n, pos, sent, set(content_terms(sent))) for pos, sent in enumerate(split_sentences(body)))
        return rows

    def _paraphrased_heading(self, question: str, hits: Sequence[Hit], read: bool) -> Generation | None:
        """A question that paraphrases a section's heading in words none of its sentences use ("In
        which cases does the verifier reject an answer?" under "When does the verifier refuse an
        answer?") gets the section's opening sentences, as a heading asked as written does, when
        the reader read that section first and trusts it."""
        first = hits[0]
        if (not read or first.kind != HitKind.DOC or first.heading_similarity < self.cfg.heading_paraphrase_similarity
                or not trusted(first, self.trust, read)):
            return None
        lead = _lead(first.text, question, self.cfg.max_sentences)
        return _quote([(1.0, 1, pos, sent) for pos, sent in lead]) if lead else None

    def _unquotable(self, hits: Sequence[Hit]) -> Generation | None:
        """A refusal when no chunk is close enough to quote (without a reader, which decides when it read them)."""
        best_similarity = max(h.similarity for h in hits)
        if not was_read(hits) and best_similarity < self.cfg.min_quote_similarity:  # the reader, when it read them, decided
            return Generation(
                text="", llm_called=False, reason=reasons.LOW_CONFIDENCE,
                detail=(f"No source is close enough to quote as an answer (best similarity "
                             f"{best_similarity:.2f} < {self.cfg.min_quote_similarity:.2f})."),
            )
        return None

    def _verbatim(self, question: str, hits: Sequence[Hit]) -> Generation | None:
        """The answer when the question is asked as an FAQ question or a section heading is written
        (an FAQ's answer, a section's opening sentences), or a refusal when nothing may be quoted;
        None: choose sentences."""
        faq = verbatim_faq(question, hits, self.cfg, self.trust)
        section = verbatim_section(hits, self.cfg)
        if faq is not None and section is not None and section[1].heading_similarity > faq[1].similarity:
            faq = None  # asked as this section's heading is written, more closely than as the FAQ question
        if faq is not None:
            n, hit = faq
            return Generation(text=f"{hit.faq_answer.strip()} {marker(n)}", llm_called=False, faq=True)
        refused = self._unquotable(hits)
        if refused is not None:
            return refused
        if section is not None:
            n, hit = section
            lead = _lead(hit.text, question, self.cfg.max_sentences)
            return _quote([(1.0, n, pos, sent) for pos, sent in lead]) if lead else None
        return None


def _section_of(hit: Hit) -> tuple[str, str]:
    """The section a chunk belongs to: its page and heading (an FAQ entry is a section of its own)."""
    return hit.doc_id, hit.faq_question if hit.kind == HitKind.FAQ else hit.heading


def _within(section: tuple[str, str], other: tuple[str, str]) -> bool:
    """`other` is `section`, or a part of it or the section it is part of, on the same page
    ("Common errors > SyntaxError" and "Common errors > SyntaxError > Unsupported JavaScript syntax")."""
    (doc, heading), (other_doc, other_heading) = section, other
    if doc != other_doc:
        return False
    return heading == other_heading or f"{other_heading} > ".startswith(f"{heading} > ") or (
        f"{heading} > ".startswith(f"{other_heading} > ") and bool(other_heading))


def _one_section(scored: list[Candidate], hits: Sequence[Hit]) -> list[Candidate]:
    """The ranked sentences of the section the best one stands in (with its subsections, or under
    the heading it is a subsection of), each placed in the page's order (its chunk's position, then
    its place in the chunk) and once: chunks of one section overlap, and a sentence carried into
    the next chunk is quoted once, at its best score."""
    section = _section_of(hits[scored[0][1] - 1])
    seen: set[str] = set()
    out: list[Candidate] = []
    for score, n, pos, sent in scored:
        if _within(section, _section_of(hits[n - 1])) and sent not in seen:
            seen.add(sent)
            out.append((score, n, hits[n - 1].position * SECTION_STRIDE + pos, sent))
    return out


def _lead(text: str, question: str, count: int) -> list[tuple[int, str]]:
    """A section's opening sentences that may be quoted, with their places."""
    return [(pos, sent) for pos, sent in enumerate(split_sentences(text)) if quotable(sent, question)][:count]


def _quote(chosen: Sequence[Candidate], in_section: bool = False) -> Generation:
    """The chosen sentences in source order, each with its [C#] citation: one section's in its own
    order (`in_section`: the places are the section's), else by chunk, then place in the chunk."""
    ordered = sorted(chosen, key=lambda r: (r[2], r[1]) if in_section else (r[1], r[2]))
    return Generation(text=" ".join(f"{sent.rstrip()} {marker(n)}" for _, n, _, sent in ordered), llm_called=False)
