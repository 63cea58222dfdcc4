"""The default generator: no LLM, answers with cited sentences from the sources.

An FAQ match returns its stored answer verbatim; otherwise the sentences that
share the most (idf-weighted) content words with the question are quoted, each
with its [C#] citation, in the order they appear in the sources.

Quoting is stricter than the gates: an LLM answer is checked claim by claim against
the evidence, but a quoted sentence is evidence by construction, so the only guard
against quoting a near miss is how close the sources are to the question. Unless the
best chunk reaches `min_quote_similarity`, nothing is quoted.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

from core import reasons
from core.claims import split_sentences
from core.fuzzy import faq_match
from core.lexicon import content_terms
from core.messages import Generation, Hit
from core.settings import ExtractiveSettings

RELATIVE_FLOOR = 0.4  # a further sentence is quoted only if it scores at least this share of the best one
RANK_PENALTY = 0.02  # per retrieval rank: of two equally matching sentences, the better-ranked chunk's wins


class ExtractiveGenerator:
    """Selects and cites the sentences that answer the question."""

    name = "extractive"

    def __init__(self, cfg: ExtractiveSettings) -> None:
        self.cfg = cfg

    def generate(self, question: str, hits: Sequence[Hit]) -> Generation:
        if not hits:
            return Generation(text="", llm_called=False)
        faq = self._faq(question, hits)
        if faq is not None:
            n, hit = faq
            return Generation(text=f"{hit.faq_answer.strip()} [C{n}]", llm_called=False, faq=True)
        best_similarity = max(h.similarity for h in hits)
        if best_similarity < self.cfg.min_quote_similarity:
            return Generation(
                text="", llm_called=False, reason=reasons.LOW_CONFIDENCE,
                explanation=(f"No source is close enough to quote as an answer (best similarity "
                             f"{best_similarity:.2f} < {self.cfg.min_quote_similarity:.2f})."),
            )
        q_terms = set(content_terms(question))
        rows: list[tuple[int, int, str, set[str]]] = []
        for n, hit in enumerate(hits, start=1):
            body = hit.faq_answer if hit.kind == "faq" and hit.faq_answer else hit.text
            for pos, sent in enumerate(split_sentences(body)):
                rows.append((n, pos, sent, set(content_terms(sent))))
        if not rows or not q_terms:
            return Generation(text="", llm_called=False)
        df: Counter[str] = Counter()
        for _, _, _, terms in rows:
            df.update(terms)
        total = len(rows)

        def idf(t: str) -> float:
            return math.log(1.0 + total / (1.0 + df.get(t, 0)))

        q_weight = sum(idf(t) for t in q_terms) or 1.0
        scored: list[tuple[float, int, int, str]] = []
        for n, pos, sent, terms in rows:
            overlap = sum(idf(t) for t in q_terms & terms) / q_weight
            prior = hits[n - 1].similarity
            score = overlap * (0.75 + 0.25 * prior) - RANK_PENALTY * (n - 1)
            scored.append((score, n, pos, sent))
        scored.sort(key=lambda r: (-r[0], r[1], r[2]))
        chosen = [r for r in scored[: self.cfg.max_sentences] if r[0] >= self.cfg.min_sentence_score]
        if not chosen:
            return Generation(text="", llm_called=False)
        best = chosen[0][0]
        chosen = [r for r in chosen if r[0] >= best * RELATIVE_FLOOR]
        chosen.sort(key=lambda r: (r[1], r[2]))
        text = " ".join(f"{sent.rstrip()} [C{n}]" for _, n, _, sent in chosen)
        return Generation(text=text, llm_called=False)

    def _faq(self, question: str, hits: Sequence[Hit]) -> tuple[int, Hit] | None:
        """The FAQ entry that answers verbatim: the best hit when it is close enough, or any FAQ
        hit whose question has every content word of the user's and vice versa, spelling
        variants allowed (a misspelt or Arabic-lettered question embeds further away)."""
        top = hits[0]
        if top.kind == "faq" and top.faq_answer and top.similarity >= self.cfg.faq_min_similarity:
            return 1, top
        for n, hit in enumerate(hits, start=1):
            if hit.kind == "faq" and hit.faq_answer and faq_match(question, hit.faq_question) >= 1.0:
                return n, hit
        return None
