"""When a hit may be quoted verbatim: an FAQ entry asked as written, a section whose heading the
question is asked as. The passage reader's stage reads this to know which questions a verbatim
quote settles; the extractive generator reads it to quote them."""

from __future__ import annotations

from collections.abc import Sequence

from core.messages import Hit, HitKind
from core.settings import ExtractiveSettings
from core.text.fuzzy import faq_match


def verbatim_section(hits: Sequence[Hit], cfg: ExtractiveSettings) -> tuple[int, Hit] | None:
    """The section whose heading the question is asked as: found by its heading key at least
    `heading_min_similarity` (stricter than the FAQ floor: a question merely near a heading may
    ask something its section does not say). Its opening sentences are the answer the heading
    promises, quoted as an FAQ's answer is; of several chunks under that heading, the first."""
    best: tuple[float, int, int, Hit] | None = None
    for n, hit in enumerate(hits, start=1):
        if hit.kind == "doc" and hit.heading_similarity >= cfg.heading_min_similarity:
            rank = (-hit.heading_similarity, hit.position, n)
            if best is None or rank < best[:3]:
                best = (*rank, hit)
    return None if best is None else (best[2], best[3])


def verbatim_faq(question: str, hits: Sequence[Hit], cfg: ExtractiveSettings,
                 trust: float = 0.0) -> tuple[int, Hit] | None:
    """The FAQ entry that answers verbatim: the closest FAQ hit when it is close enough and comes
    first (in the reader's order when it read the chunks: an FAQ can be the closest hit to a
    question its answer does not address, as "What is groundbot?" is to "Where does groundbot read
    its config from?") and, when the reader read it, the reader trusts it (`trust`) or the
    question is as close to it as a heading asked as written is (being near is not enough: "When
    was groundbot first released?" is near "What is groundbot?", whose answer the reader doubts
    for it); or any FAQ hit whose question has every content word of the user's and vice versa,
    spelling variants allowed (a misspelt or Arabic-lettered question embeds further away)."""
    faqs = [(n, h) for n, h in enumerate(hits, start=1) if h.kind == HitKind.FAQ and h.faq_answer]
    closest = max(faqs, key=lambda f: (f[1].similarity, -f[0]), default=None)
    if closest is not None and closest[1].similarity >= cfg.faq_min_similarity and closest[0] == 1:
        p = closest[1].answer_probability
        if p is None or p >= trust or closest[1].similarity >= cfg.heading_min_similarity:
            return closest
    for n, hit in enumerate(hits, start=1):
        if hit.kind == HitKind.FAQ and hit.faq_answer and faq_match(question, hit.faq_question) >= 1.0:
            return n, hit
    return None
