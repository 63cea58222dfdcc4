"""A short question the sources answer in clearly different ways gets a question back.

"Where does the token go?" is answered by the Telegram page's token section and by the Slack
page's; picking one is a guess. When the passage reader trusts different sections about as much, whose headings each hold every word of the question (the same question about
different things), and each is told apart from the other by words the question does not use, the turn
is refused with AMBIGUOUS_QUESTION and the readings are offered as suggestions (each a question the
knowledge base answers as asked: the section's heading or FAQ question). A later question about
"this burger" when the conversation never named one is asked back the same way. Both are gates
(`unnamed_thing`, `one_reading`; core/gate/gates.py runs them).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from core import reasons
from core.gate.chain import Verdict, refuse
from core.gate.passage_reading import asked_verbatim, read_rest
from core.gate.view import GateView
from core.messages import Hit, HitKind
from core.settings import RetrievalSettings
from core.text.lexicon import content_terms

_SITE_SUFFIX = re.compile(r"\s+[|–—-]\s+")  # a page title's site name: "Page | Site", "Page - Site"


def is_short(question: str, cfg: RetrievalSettings) -> bool:
    """Short enough to have several readings: the reader then reads every retrieved chunk."""
    return cfg.ask_back and 0 < len(set(content_terms(question))) <= cfg.ask_back_max_words


def readings(question: str, hits: Sequence[Hit], floor: float, cfg: RetrievalSettings) -> list[Hit]:
    """The hits that stand for the question's different readings (at least two), or [] when the
    question has one reading: it is long enough to say what it means, or one section answers
    clearly best, or the best sections are told apart by nothing."""
    asked = set(content_terms(question))
    if not is_short(question, cfg):
        return []
    trusted = sorted((h for h in hits if h.answer_probability is not None and h.answer_probability >= floor),
                     key=lambda h: -(h.answer_probability or 0.0))
    if not trusted:
        return []
    best = trusted[0].answer_probability or 0.0
    picked: list[Hit] = []
    for hit in trusted:
        if (hit.answer_probability or 0.0) < best - cfg.ask_back_margin:
            break
        if all((hit.doc_id, hit.heading) != (p.doc_id, p.heading) for p in picked):
            picked.append(hit)
    if len(picked) < 2:
        return []
    labelled = [(h, set(content_terms(f"{h.title} {h.heading} {h.faq_question}"))) for h in picked]
    labelled = [(h, label) for h, label in labelled if asked <= label]  # each heading asks it too
    if len(labelled) < 2:
        return []
    picked = [h for h, _ in labelled]
    told = [label - asked for _, label in labelled]
    apart = [terms - set().union(*(o for j, o in enumerate(told) if j != i)) for i, terms in enumerate(told)]
    return [h for h, own in zip(picked, apart, strict=True) if own][:3] if sum(1 for a in apart if a) >= 2 else []


def reading_question(hit: Hit) -> str:
    """The question a reading stands for: an FAQ's question, a heading written as a question,
    or the heading with its document's title."""
    if hit.kind == HitKind.FAQ and hit.faq_question:
        return hit.faq_question.strip()
    heading = hit.heading.split(" > ")[-1].strip()
    if heading.endswith(("?", "؟")):
        return heading
    return f"{heading} ({hit.title})" if heading else hit.title


def named_readings(question: str, unnamed: str, hits: Sequence[Hit], limit: int) -> list[str]:
    """The question asked about each thing the sources name where it says "this burger" or "the
    actor": the phrase replaced by the title of each distinct document among the retrieved
    chunks, best first ("What does this library offer?" -> "What does Sacramento Public Library
    offer?"). Offered with the question back, each only if it is answered as asked."""
    if not unnamed or unnamed not in question:
        return []
    out: list[str] = []
    for hit in hits:
        title = _SITE_SUFFIX.split(" ".join(hit.title.split()), 1)[0].strip()  # "Rules | Court of X" -> "Rules"
        if not title or len(title) > 60:
            continue
        possessive = "'s" if unnamed.lower().endswith("'s") else ""
        asked = question.replace(unnamed, title + possessive, 1)
        if asked not in out:
            out.append(asked)
        if len(out) >= limit:
            break
    return out


def unnamed_thing(view: GateView) -> Verdict | None:
    """The ask-back: a later question about "this burger" when the conversation never named one
    has as many readings as there are burgers; it is asked back, offering the things the
    sources name (read in retrieval's order: the reader has not read the chunks)."""
    found = view.found
    unnamed = found.unnamed
    if not unnamed or not view.settings.retrieval.ask_back:
        return None
    asked = found.stated if unnamed in found.stated else view.asked  # the phrase as typed
    offered = named_readings(asked, unnamed, view.retrieved.hits, view.settings.refusal.max_suggestions + 1)
    return refuse(reasons.AMBIGUOUS_QUESTION, "unnamed_thing", readings=offered, phrase=unnamed)


def one_reading(view: GateView) -> Verdict | None:
    """A short question the sources answer in clearly different ways is asked back, offering
    each reading; a follow-up or a question asked as a heading is read as meant."""
    reading, reader, cfg, question = view.reading, view.reader, view.settings.retrieval, view.question
    if reading is None or reader is None or view.resolution.follow_up:
        return None
    if asked_verbatim(question, view.hits, view.settings.extractive) or not is_short(question, cfg):
        return None
    every = read_rest(question, view.hits, reader, cfg.top_k)  # the readings, not the order
    offered = [reading_question(h) for h in readings(question, every, reading.floor, cfg)]
    if not offered:
        return None
    return refuse(reasons.AMBIGUOUS_QUESTION, detail=f"The sources answer {len(offered)} different readings of the question.",
                  readings=offered)
