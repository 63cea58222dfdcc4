"""The review queue as admins act on it, written once for every platform.

list, show, approve, edit-then-approve, reject and approve-and-save-as-FAQ return
platform-neutral replies (core/admin_replies.py); the user's answer goes back to the original
chat or thread through the Delivery port of the platform it came from. Non-admins are
refused before anything is read or changed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from pydantic import TypeAdapter

from bot.services.outbox import PUSHED, Courier
from core import reasons
from core.admin_replies import Action, Button, Reply, Section
from core.catalogue import say
from core.messages import NOT_SET_UP, ClaimRecord, ConversationKey, Decision, Recorded, Source, Suggestion
from core.text.citations import strip_markers
from core.text.normalize import normalize_text
from storage.ingestion.ingest import IngestSummary
from storage.records.reviews import EXPERT, QueueEntry, ReviewQueue

SOURCES = TypeAdapter(list[Source])  # a stored record's sources and claims, read back by their models
CLAIMS = TypeAdapter(list[ClaimRecord])

ADMIN_LANG = "en"  # admins read the queue in one language; users get theirs
STATUS_OF = {Action.APPROVE: "approved", Action.EDIT: "edited", Action.REJECT: "rejected", Action.FAQ: "faq"}


def item_buttons(item_id: int, with_show: bool = False) -> tuple[Button, ...]:
    actions = ([Action.SHOW] if with_show else []) + [Action.APPROVE, Action.EDIT, Action.REJECT, Action.FAQ]
    return tuple(Button(say(f"button_{a if a != Action.SHOW else 'show'}", ADMIN_LANG), a, item_id)
                 for a in actions)


def without_citations(text: str) -> str:
    """An answer as an FAQ stores it: the [C#] markers belonged to the draft's context."""
    return strip_markers(text)


def _sources(record: dict[str, object]) -> list[Source]:
    return SOURCES.validate_python(record.get("sources") or [])


def user_decision(entry: QueueEntry, answer: str, refusal: str = "", suggestions: list[Suggestion] | None = None,
                  *, reason: reasons.Reason | None = None) -> Decision:
    """The decision the user receives: the reviewed answer, or the refusal with suggestions."""
    rec = entry.record
    lang = str(rec.get("language") or "en")
    refused = not answer
    header = say("reviewed_rejected_header" if refused else "reviewed_header", lang, question=entry.question)
    return Decision(
        question=entry.question, normalized_question=normalize_text(entry.question),
        retrieval_query=str(rec.get("retrieval_query", "")), answer="" if refused else f"{header}\n\n{answer}",
        refused=refused, refusal_reason=reason or "", refusal_message=refusal,
        explanation=header if refused else "", status=reasons.Status.REFUSE if refused else reasons.Status.PASS,
        state=reasons.State.REFUSED if refused else reasons.State.REPLIED, reasons=[reason] if reason else [], checks_passed=[],
        checks_failed=[], scores={}, llm_called=False, sources=[] if refused else _sources(rec),
        suggestions=suggestions or [], uncovered_claims=[], latency_ms={},
        index_version=str(rec.get("index_version", "")), config_hash=str(rec.get("config_hash", "")),
        language=lang, turn_id=entry.turn_id, route=reasons.Route.REVIEWED, recorded=Recorded.DATABASE, scope=_scope(entry))


def _scope(entry: QueueEntry) -> str | None:
    """The knowledge scope the item's question was asked in (None: the whole knowledge base)."""
    scope = entry.record.get("scope")
    return str(scope) if scope and scope != NOT_SET_UP else None


class ReviewCards:
    """The review items as admins read them: an item in full (`show`), the card that tells them
    of a new one, and an announcement as the courier sends it. Its own object, built before the
    courier and the desk: the courier sends these cards and the desk sends through the courier,
    so neither needs the other finished to be built."""

    def __init__(self, queue: ReviewQueue,
                 scope_admins: Callable[[str | None, str], list[str]] = lambda scope, platform: []) -> None:
        self.queue = queue
        self.scope_admins = scope_admins  # (scope, platform) -> those admins' user ids there

    def show(self, entry: QueueEntry) -> Reply:
        """Question, draft, sources, the claim map with uncovered claims, and the risk's parts."""
        rec, lang = entry.record, ADMIN_LANG
        lines = [say("review_show_question", lang, platform=entry.platform, user=entry.user_id, question=entry.question)]
        if rec.get("scope"):  # the knowledge scope the question was asked in: its answer is saved there
            lines.append(say("review_show_scope", lang, scope=rec["scope"]))
        lines.append(say("review_show_draft", lang, draft=entry.draft) if entry.draft else
                     say("review_show_no_draft", lang, reason=rec.get("refusal_reason", "")))
        if entry.comment and entry.origin != EXPERT:  # an expert's answer is the draft itself
            lines.append(say("review_show_comment", lang, comment=entry.comment))
        parts = rec.get("risk_parts") or {}
        if rec.get("risk") is not None:
            lines.append(say("review_show_risk", lang, score=rec["risk"],
                             parts=", ".join(f"{k} {v}" for k, v in dict(parts).items())))  # type: ignore[call-overload]
        claims = CLAIMS.validate_python(rec.get("claim_map") or [])
        if claims:
            lines.append(say("review_show_claims", lang))
            for c in claims:
                lines.append(say("review_show_claim", lang, mark="✓" if c.supported else "✗", claim=c.claim,
                                 support=c.support))
                if c.missing:
                    lines.append(say("review_show_missing", lang, missing=", ".join(c.missing)))
        uncovered = rec.get("uncovered_claims") or []
        if uncovered:
            lines.append(say("review_show_uncovered", lang, claims=" | ".join(map(str, uncovered))))  # type: ignore[call-overload]
        sources = _sources(rec)
        if sources:
            lines.append(say("review_show_sources", lang))
            lines.extend(f"  [{s.number}] {s.title or s.doc_id} › {s.heading} ({s.url or s.doc_id})" for s in sources)
        buttons = item_buttons(entry.id) if entry.status == "open" else ()
        return Reply((Section("\n".join(lines), buttons),), prefill=without_citations(entry.draft))

    def card(self, entry: QueueEntry) -> Reply:
        """What admins are sent when an item joins the queue: why, the item, its buttons."""
        head = say(f"review_card_{entry.origin}", ADMIN_LANG, id=entry.id, platform=entry.platform,
                   risk=entry.record.get("risk"), reason=entry.reason)
        shown = self.show(entry)
        return Reply((Section(head), *shown.sections))

    def announcement(self, item_id: int, platform: str) -> tuple[Reply, list[str]] | None:
        """An announcement as it is sent: the item's card and the ids of the admins of its scope
        on `platform`; None once the item is decided (or gone): nothing to announce any more."""
        entry = self.queue.entry(item_id)
        if entry is None or entry.status != "open":
            return None
        return self.card(entry), self.scope_admins(_scope(entry), platform)


class ReviewDesk:
    """Admins' review commands over the queue (the one its `cards` read), delivering decisions
    through the adapters."""

    def __init__(self, cards: ReviewCards, courier: Courier, *,
                 save_faq: Callable[[str, str, str, str | None], IngestSummary],
                 suggestions: Callable[[str, str | None], list[str]],
                 refusal_messages: Mapping[str, str], is_admin: Callable[[str, str], bool],
                 administered: Callable[[str, str], list[str]] = lambda platform, user: [],
                 announce_to: Callable[[str | None], Sequence[str]] = lambda scope: ()) -> None:
        self.cards = cards
        self.queue = cards.queue
        self.courier = courier  # sends the decisions, to the platforms this process is connected to
        self.save_faq = save_faq
        self.suggestions = suggestions
        self.refusal_messages = refusal_messages
        self.is_admin = is_admin
        self.administered = administered  # a scope's own admins review the questions asked in it
        self.announce_to = announce_to  # (scope) -> the platforms with admins to tell of an item asked in it

    def handle(self, platform: str, user_id: str, action: str, item_id: int | None = None, text: str = "") -> Reply:
        own = None if self.is_admin(platform, user_id) else self.administered(platform, user_id)
        if own == []:
            return Reply.of(say("not_admin", ADMIN_LANG, what=say("what_review", ADMIN_LANG)), ok=False)
        if action in ("", "list"):
            return self.listing(own)
        if action not in set(Action) or item_id is None:
            return Reply.of(say("review_usage", ADMIN_LANG), ok=False)
        entry = self.queue.entry(item_id)
        if entry is None:
            return Reply.of(say("review_unknown", ADMIN_LANG, id=item_id), ok=False)
        if not self.may_review(entry, own):
            what = say("what_review_scope", ADMIN_LANG, scope=entry.record.get("scope") or "-")
            return Reply.of(say("not_admin", ADMIN_LANG, what=what), ok=False)
        if action == Action.SHOW:
            return self.cards.show(entry)
        return self.decide(entry, Action(action), f"{platform}:{user_id}", text.strip())

    @staticmethod
    def may_review(entry: QueueEntry, own: list[str] | None) -> bool:
        """Whether a reviewer of `own` scopes (None: every scope, a global admin) may see and decide the item."""
        return own is None or entry.record.get("scope") in own

    def listing(self, scopes: list[str] | None = None) -> Reply:
        """The open items, oldest first: all of them for a global admin, a scope admin's scopes' own."""
        entries = self.queue.entries(scopes=scopes)
        if not entries:
            return Reply.of(say("review_empty", ADMIN_LANG))
        sections = [Section(say("review_list_header", ADMIN_LANG, count=len(entries)))]
        for e in entries:
            origin = say(f"review_origin_{e.origin}", ADMIN_LANG, reason=e.reason)
            sections.append(Section(say("review_item_line", ADMIN_LANG, id=e.id, origin=origin, question=e.question),
                                    item_buttons(e.id, with_show=True)))
        return Reply(tuple(sections))

    def announce(self, turn_id: int) -> None:
        """Queue the turn's open queue item for its admins: one outbox row per platform with
        admins to tell (Telegram: the global admins' and the scope's own admins' private chats;
        Slack: the admin channel and the scope admins' direct messages), each once, however often
        this is asked; the courier posts the cards (ReviewCards.announcement) from the process
        that runs the platform, and retries them until they are sent. A held turn's item needs no
        call: the transcript store queues its announcements with it."""
        entry = self.queue.entry_for_turn(turn_id)
        if entry is None or entry.status != "open":
            return
        self.courier.outbox.announce(entry.id, list(self.announce_to(_scope(entry))))
        self.courier.wake()

    def decide(self, entry: QueueEntry, action: Action, reviewer: str, text: str) -> Reply:
        """Take the decision once, then act on it: save an FAQ entry, tell the user."""
        lang = ADMIN_LANG
        answer = text if action in (Action.EDIT, Action.FAQ) and text else entry.draft
        if action == Action.EDIT and not text:
            return Reply.of(say("edit_prompt", lang, id=entry.id), ok=False)
        if action != Action.REJECT and not answer:
            return Reply.of(say("review_needs_text", lang, id=entry.id), ok=False)
        if not self.queue.decide(entry.id, STATUS_OF[action], reviewer, "" if action == Action.REJECT else answer):
            now = self.queue.entry(entry.id) or entry
            return Reply.of(say("review_already", lang, id=entry.id, status=now.status, reviewer=now.reviewer), ok=False)
        if action == Action.REJECT:
            done = say("review_rejected", lang, id=entry.id)
            decision = self._rejection(entry)
        else:
            done = say({Action.APPROVE: "review_approved", Action.EDIT: "review_edited"}.get(action, "review_approved"),
                       lang, id=entry.id)
            if action == Action.FAQ:
                summary = self.save_faq(entry.question, without_citations(answer), reviewer, _scope(entry))
                done = say("review_faq_saved", lang, id=entry.id, summary=summary.line())
            decision = user_decision(entry, answer)
        problem = self.deliver(entry, decision)
        return Reply.of(done if not problem else f"{done}\n{say('review_not_delivered', lang, why=problem)}")

    def _rejection(self, entry: QueueEntry) -> Decision:
        lang = str(entry.record.get("language") or "en")
        messages = self.refusal_messages
        texts = self.suggestions(entry.question, _scope(entry))
        stored = [Suggestion(i, t) for i, t in self.queue.add_suggestions(entry.turn_id, texts)] if texts else []
        return user_decision(entry, "", messages.get(lang) or messages.get("en", ""), stored,
                             reason=reasons.REVIEW_REJECTED)

    def deliver(self, entry: QueueEntry, decision: Decision) -> str:
        """Queue the decision in the outbox, then send it to the original chat/thread if this
        process is connected to that platform; the problem, if it is not sent yet (it stays in
        the outbox, and a process connected to the platform retries it until it is sent)."""
        if entry.platform not in PUSHED:  # kept with the review item, where the queue shows it
            return say("review_no_push", ADMIN_LANG, platform=entry.platform)
        courier = self.courier
        row = courier.outbox.add(entry.id, ConversationKey(entry.platform, entry.chat_id, entry.thread_id),
                                 decision.to_dict())
        if courier.delivery(entry.platform) is None:
            return say("review_no_delivery", ADMIN_LANG, platform=entry.platform)
        return courier.attempt(row) or ""
