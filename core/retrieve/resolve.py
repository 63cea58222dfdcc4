"""A follow-up becomes the question the user means, before anything is searched.

"And over HTTP?" after "How do I run the Slack bot in Socket Mode?" means "How do I run the Slack
bot over HTTP?"; "Where do I put its token?" after "How do I create a Telegram bot with
BotFather?" means "Where do I put the Telegram bot's token?". Glueing the earlier questions before
the new one lets the earlier topic outweigh what the new one asks, and the passage reader and the
generator then read words no passage answers on their own. This local resolver rewrites the
follow-ups it can read (a fragment that replaces a part of the question before it, a pronoun that
stands for that question's topic) and leaves a question that names its own topic alone; the
question before is the one it was understood as, in the same knowledge scope. What it returns is a
query and a reading for the stages, never an answer: everything the user gets is still verified
against the sources.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from core.messages import PriorTurn
from core.text.language import language_of
from core.text.lexicon import content_terms
from core.text.normalize import normalize_text, words

ANAPHORA_FA = frozenset(["او", "آن", "این", "آنها", "اینها", "همین", "همان"])  # Persian pronouns and demonstratives
LEADS = ("and also ", "and then ", "and ", "also ", "what about ", "how about ", "and what about ", "then ",
         "و ", "پس ")
_PREPOSITIONS = frozenset(["in", "on", "over", "with", "for", "via", "through", "from", "without", "using", "by", "at",
                           "into", "under", "behind", "inside", "outside", "across", "to"])
# the words before a question's main verb ("how do i", "where can we", "what should one") or its subject ("what is")
_ASKING = re.compile(r"^\s*(?:(?:how|what|where|when|why|which|who|whom|whose)\s+)?(?:(?:do|does|did|can|could|should|"
                     r"would|will|shall|may|must|is|are|was|were|has|have|had)\s+)?(?:(?:i|we|you|one|they|people|"
                     r"users?|admins?)\s+)?(?:(?:need|have|want|try)\s+to\s+)?", re.IGNORECASE)
_VERB_BEFORE = re.compile(r"\b(?:do|does|did|can|could|should|would|will|shall|may|must|to)\s+(?:i|we|you|one|they|"
                          r"people|users?|admins?)?\s*$", re.IGNORECASE)
_TRAILING_PP = re.compile(r"\s+(?:" + "|".join(sorted(_PREPOSITIONS)) + r")\s+[^?]*$", re.IGNORECASE)
_POSSESSIVE = re.compile(r"\b(its|their)\b", re.IGNORECASE)
# "it" standing for something, not the "it" of "is it possible to ..." or "it takes"
_OBJECT = re.compile(r"\b(them|they|it(?!\s+(?:possible|safe|ok|okay|true|necessary|required|recommended|worth|better|"
                     r"best|hard|easy|allowed|advisable|wise|normal|common|seems?)\b)(?!\s+takes?\s+(?:\w+\s+)?to\b))\b",
                     re.IGNORECASE)
_ACTION = re.compile(r"\bit(?=\s+(?:take|takes|cost|costs|last|lasts|require|requires|run|runs)\b)", re.IGNORECASE)
_DEMONSTRATIVE = re.compile(r"\b(this|that)\b(?=\s*(?:\?|$|\s+(?:is|does|do|can|will|work|works|mean|means|cost|"
                            r"costs|happen|happens)\b))", re.IGNORECASE)
_DO_THAT = re.compile(r"\bdo\s+(?:that|it|this)\b", re.IGNORECASE)
_ASKED_ABOUT = re.compile(r"\b(is|does|do|can|will|was|are|about)\s+(this|that)\b(?!\s+(?:the|a|an)\b)", re.IGNORECASE)
# one thing of a kind that has many ("the actor", "this county"): a question naming only its kind points at nothing
_ONE_OF_MANY = ("actor", "actress", "singer", "author", "artist", "writer", "director", "athlete", "player", "president",
                "band", "country", "county", "province", "nation", "chain", "movie", "album", "song", "novel", "episode",
                "burger", "island", "river", "lake", "mountain")  # not "the company" or "the library": an
# organisation's own knowledge base calls its company, library or office "the" one
_POINTING = re.compile(r"\b(?:(?:this|these|those)\s+(?:[a-z][\w'-]*\s+){0,3}?(?P<head>[a-z][\w-]*)|the\s+"
                       r"(?:[a-z][\w'-]*\s+)?(?P<kind>" + "|".join(_ONE_OF_MANY) + r")(?:'s)?)\b", re.IGNORECASE)
_NOT_THINGS = frozenset(["is", "are", "was", "were", "does", "do", "did", "can", "could", "will", "would", "should", "has",
                         "have", "had", "one", "way", "time", "year", "information", "question", "kind", "type", "case",
                         "means", "mean", "sounds", "seems", "different", "huge", "much", "many", "same", "a", "an",
                         "the", "work", "works", "cost", "costs", "happen", "happens", "help", "helps", "apply",
                         "applies", "matter", "matters", "make", "makes", "take", "takes", "need", "needs", "say", "says",
                         "mean", "be", "also", "still", "only", "just", "really"])
_WHICH = re.compile(r"^\s*(?:which|what)\s+((?:[\w'-]+\s+){0,3}?[\w'-]+)\s+(?:may|can|do|does|did|is|are|was|were|should|"
                    r"will|would|must|has|have)\b", re.IGNORECASE)
_PARTICLES = frozenset(["up", "out", "off", "down", "back", "over", "away"])
_DETERMINERS = frozenset(["the", "a", "an", "my", "our", "your", "their", "its", "this", "that", "these", "those"])
_THERE = re.compile(r"(?<!\bis )(?<!\bare )(?<!\bwas )\bthere\b(?!\s+(?:is|are|was|were|a|an|any)\b)", re.IGNORECASE)
_PLURAL = re.compile(r"\b(?:them|they|their|theirs)\b", re.IGNORECASE)
_SINGULAR = re.compile(r"\b(?:it|its)\b", re.IGNORECASE)
_FRAGMENT_WORDS = 6  # "And over HTTP?", "What about a private chat?": a fragment, not a question of its own


@dataclass(frozen=True)
class Resolution:
    """How a turn's question was understood: `resolved` is what every stage reads."""

    asked: str
    resolved: str
    follow_up: bool = False
    method: str = "none"  # none (no earlier turn) | standalone | local | model | local-fallback
    why: str = ""
    previous: str = ""  # the earlier question it leans on, as that one was understood
    previous_section: str = ""  # the section that answered it ("" when refused)
    new_terms: tuple[str, ...] = field(default_factory=tuple)  # what it asks that the earlier question did not
    unnamed: str = ""  # "this burger": something the question points at that the conversation never named

    @property
    def changed(self) -> bool:
        return self.resolved.strip() != self.asked.strip()

    def to_dict(self) -> dict[str, Any]:
        return {"follow_up": self.follow_up, "method": self.method, "why": self.why, "previous": self.previous,
                "previous_section": self.previous_section, "new_terms": list(self.new_terms), "unnamed": self.unnamed}


def earlier(history: Sequence[PriorTurn], scope: str | None, turns: int) -> list[PriorTurn]:
    """The earlier turns a follow-up may lean on: the last `turns` of the same knowledge scope
    (a thread continued in another scope's channel starts afresh: nothing of the old scope is read)."""
    same = [t for t in history if (t.scope or "") == (scope or "") and t.question.strip()]
    return same[-turns:] if turns > 0 else []


def lead_of(question: str) -> str:
    """The connecting words a follow-up opens with ("and ", "what about "), or ""."""
    low = " ".join(question.strip().lower().split())
    return next((lead for lead in LEADS if low.startswith(lead) or low == lead.strip() + "?"), "")


def is_follow_up(question: str) -> bool:
    """It points back (a pronoun standing for something said before) or opens as a continuation.
    A short question is not a follow-up by itself: "Can I use PostgreSQL?" names its topic."""
    toks = words(normalize_text(question))
    if not toks:
        return False
    pointing = any(rx.search(question) for rx in (_POSSESSIVE, _OBJECT, _DEMONSTRATIVE, _ASKED_ABOUT, _THERE))
    return bool(pointing) or bool(ANAPHORA_FA & set(toks)) or bool(lead_of(question))


def resolve(question: str, history: Sequence[PriorTurn], scope: str | None = None, turns: int = 3) -> Resolution:
    """The question the user means, from the question and the earlier turns of its scope."""
    prior = earlier(history, scope, turns)
    unnamed = unnamed_referent(question, prior)
    if not prior:
        return Resolution(question, question, why="no earlier turn in this conversation", unnamed=unnamed)
    last = prior[-1]
    if not is_follow_up(question):
        return Resolution(question, question, method="standalone", why="names its own topic", unnamed=unnamed)
    rewritten, how = rewrite(question, last.meant)
    return Resolution(question, rewritten, follow_up=True, method="local", why=how, previous=last.meant,
                      previous_section=last.section, new_terms=new_terms(rewritten, last.meant), unnamed=unnamed)


def new_terms(question: str, previous: str) -> tuple[str, ...]:
    """The content words a follow-up asks about that the question before it did not use."""
    before = set(content_terms(previous))
    return tuple(t for t in dict.fromkeys(content_terms(question)) if t not in before)


def unnamed_referent(question: str, prior: Sequence[PriorTurn]) -> str:
    """The phrase of a question that points at one thing the conversation never named ("this
    burger", "the actor", "the country"), or "": such a question has as many readings as there are
    burgers, actors and countries, and is asked back rather than guessed. Only a question after
    earlier turns is read so ("that" is left out: it is mostly a relative pronoun)."""
    if not prior:  # a first question's "this" or "the country" is the knowledge base's to read
        return ""
    said = " ".join([question] + [f"{t.meant} {t.answer}" for t in prior]).lower()
    for m in _POINTING.finditer(question):
        head = (m.group("head") or m.group("kind")).lower()
        if head in _NOT_THINGS or m.group(0).split()[1].lower() in _NOT_THINGS:
            continue
        elsewhere = said.replace(m.group(0).lower(), " ", 1)
        if not re.search(rf"\b{re.escape(head.rstrip('s'))}", elsewhere):
            return m.group(0)
    return ""


def rewrite(question: str, previous: str) -> tuple[str, str]:
    """(the follow-up as a question of its own, how it was rewritten). Only English is rewritten
    in place; a follow-up in another language is searched with the earlier question's words."""
    if language_of(question) != "en":
        return _glued(previous, question.strip()), "read with the earlier question's words"
    lead = lead_of(question)
    rest = question.strip()[len(lead):].strip() if lead else question.strip()
    body = rest.rstrip("?؟ ").strip()
    if lead and body.lower() in ("this", "that", "it", "them", "those", "these"):
        return _sentence(previous), "the earlier question, asked again"
    if lead and body and len(body.split()) <= _FRAGMENT_WORDS and not _ASKING.match(body).group(0).strip():  # type: ignore[union-attr]
        return _fill(previous, body), "a fragment put in place of the part of the earlier question it replaces"
    plural = True if _PLURAL.search(rest) else (False if _SINGULAR.search(rest) else None)
    topic = topic_of(previous, plural)  # "them" stands for a plural topic, "it" for a singular one
    pointed = _pointed(rest, topic, action_of(previous), deed_of(previous)) if topic else rest
    place = place_of(previous)
    if place and _THERE.search(pointed):
        pointed = _THERE.sub(place, pointed)
    if pointed != rest:
        return _sentence(pointed), f"a pronoun read as the earlier question's topic ({_definite(topic)})"
    if lead and rest:
        return _glued(previous, rest), "a continuation read with the earlier question's words"
    return _glued(previous, question.strip()), "read with the earlier question's words"


def _asking(question: str) -> tuple[str, str, str]:
    """(the question without its closing mark, its asking words, the rest): "How do I renew a
    book?" -> ("How do I renew a book", "How do I ", "renew a book")."""
    text = question.strip().rstrip("?؟.! ")
    m = _ASKING.match(text)
    head = m.group(0) if m else ""
    return text, head, text[len(head):].strip()


def topic_of(question: str, plural: bool | None = None) -> str:
    """What a question is about, as a noun phrase: its words after the asking words and the main
    verb, less a trailing prepositional phrase ("How do I create a Telegram bot with BotFather?"
    -> "a Telegram bot"; "What is a good turnover ratio for retail?" -> "a good turnover ratio";
    "Which folders may admins ingest from?" -> "folders"; "Is there a container image?" -> "a
    container image")."""
    text, head, rest = _asking(question)
    kind = _WHICH.match(text)
    if kind and not _VERB_BEFORE.search(head):
        subject = _subject(text[kind.end():].strip())  # "Which port does the webhook listen on?": the webhook
        choices = [c for c in (subject, kind.group(1)) if c]
        if plural is not None:  # "them" stands for the plural one, "it" for the other
            choices.sort(key=lambda c: c.split()[-1].lower().endswith("s") != plural)
        rest = choices[0]
    elif head and _VERB_BEFORE.search(head) and rest.split(None, 1)[0].lower() in _DETERMINERS:
        rest = _subject(rest) or rest  # "Where do the words users read come from?": the words users read
    elif head and _VERB_BEFORE.search(head) and len(rest.split()) > 1:
        rest = rest.split(None, 1)[1]  # the main verb
        if rest.split(None, 1)[0].lower() in _PARTICLES and len(rest.split()) > 1:
            rest = rest.split(None, 1)[1]  # "set up groundbot"
    rest = re.sub(r"^there\s+", "", rest, flags=re.IGNORECASE)
    core = _TRAILING_PP.sub("", rest).strip() or rest
    core = re.sub(r"\s+(?:there|here)$", "", core, flags=re.IGNORECASE)
    core = re.split(r"\s+(?:a|an)\s+", core, maxsplit=1)[0] if re.match(r"^[A-Za-z][\w-]*\s+(?:a|an)\s", core) else core
    return core if core and len(core.split()) <= 8 else ""


def _subject(rest: str) -> str:
    """The subject of "<the subject> <verb> [<preposition>]" ("the words users read come from" ->
    "the words users read"), when it opens with a determiner."""
    words_ = rest.split()
    if len(words_) < 3 or words_[0].lower() not in _DETERMINERS:
        return ""
    if words_[-1].lower() in _PREPOSITIONS | _PARTICLES:
        words_ = words_[:-1]
    return " ".join(words_[:-1]) if len(words_) > 2 else ""


def place_of(question: str) -> str:
    """Where the earlier question was about, when it said ("in Slack", "on Telegram"): a later
    "there" stands for it."""
    m = re.search(r"\s((?:in|on|at|inside)\s+[^?]+?)\s*\??$", question.strip(), re.IGNORECASE)
    return m.group(1) if m and len(m.group(1).split()) <= 5 else ""


def deed_of(question: str) -> str:
    """What a how-to question asks to do, as a verb phrase ("How do I renew a book?" -> "renew a
    book"), or ""."""
    _, head, rest = _asking(question)
    return rest if head and _VERB_BEFORE.search(head) and len(rest.split()) > 1 and rest.isascii() else ""


def action_of(question: str) -> str:
    """What a how-to question asks to do, as a gerund phrase ("How do I re-ingest documents?" ->
    "re-ingesting documents"), or "" when it asks about a thing ("What is groundbot?")."""
    deed = deed_of(question).split(None, 1)
    if len(deed) < 2:
        return ""
    verb = deed[0].lower()
    if verb.endswith("e") and not verb.endswith("ee"):
        verb = verb[:-1]
    elif len(verb) <= 4 and re.fullmatch(r"[a-z]*[^aeiou][aeiou][bdgmnprt]", verb):
        verb += verb[-1]  # run -> running, set -> setting
    return f"{verb}ing {_TRAILING_PP.sub('', deed[1]).strip() or deed[1]}"


def _fill(previous: str, fragment: str) -> str:
    """The earlier question with the fragment in place of the part it replaces: a prepositional
    phrase for one ("in Socket Mode" -> "over HTTP"), the first name for a name ("Telegram" ->
    "Slack"), or added at its end."""
    base = previous.strip().rstrip("?؟ ")
    first = fragment.split()[0].lower()
    if first in _PREPOSITIONS:
        cut = _TRAILING_PP.search(base)
        return _sentence((base[: cut.start()] if cut else base) + " " + fragment)
    names = [m for m in re.finditer(r"(?<!^)(?<![.?!]\s)\b[A-Z][\w-]*(?:\s+[A-Z][\w-]*)*", base) if m.group(0) != "I"]
    if names and fragment[:1].isupper():
        m = names[0]
        return _sentence(base[: m.start()] + fragment + base[m.end():])
    return _sentence(f"{base}, {fragment}")


def _glued(previous: str, question: str) -> str:
    """The question with the earlier question's content words after it, in brackets: what a
    rewrite cannot place still reaches the search, behind what is asked now."""
    own = set(content_terms(question))
    carried = [w for w in dict.fromkeys(content_terms(previous)) if w not in own]
    return f"{question.strip()} ({' '.join(carried)})" if carried else question.strip()


def _pointed(text: str, topic: str, action: str = "", deed: str = "") -> str:
    """The text with each pronoun that stands for the topic replaced by it ("it takes" stands for
    the earlier question's action, when it had one: "re-ingesting documents"; "do that" for what
    it asked to do: "renew a book")."""
    if deed:
        text = _DO_THAT.sub(lambda m: deed, text)
    if action:
        text = _ACTION.sub(lambda m: action, text)
    text = _POSSESSIVE.sub(lambda m: _possessive(topic), text)
    text = _OBJECT.sub(lambda m: _definite(topic), text)
    text = _ASKED_ABOUT.sub(lambda m: f"{m.group(1)} {_definite(topic)}", text)
    return _DEMONSTRATIVE.sub(lambda m: _definite(topic), text)


def _definite(topic: str) -> str:
    return re.sub(r"^(?:a|an)\s+", "the ", topic, flags=re.IGNORECASE)


def _possessive(topic: str) -> str:
    t = _definite(topic)
    return t + "'" if t.endswith("s") else t + "'s"


def _sentence(text: str) -> str:
    text = " ".join(text.split())
    text = text[:1].upper() + text[1:]
    return text if text.endswith(("?", "؟")) else text + "?"
