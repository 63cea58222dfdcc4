"""Admin and feedback commands, written once: every adapter hands over the command line (or
the button) and renders the platform-neutral reply (core/admin_replies.py) it gets back.

    stats                       turns, rates, latency, feedback, review queue, index
    reingest [PATH|SOURCE ...]  the configured knowledge base and its synced sources, or paths inside
                                the allowed roots, or named sources ([[sources]]) only

In a chat that a knowledge scope serves (bot/scopes.py), stats and reingest are that scope's,
and the scope's own admins may run them there besides the global admins.
    review [list]               the queue;  review show|approve|reject ID;  review edit|faq ID TEXT
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from bot.scopes import ScopeMap
from bot.services.hooks import Hooks
from bot.services.knowledge import KnowledgeBase
from bot.services.review import ReviewDesk
from bot.services.syncing import Syncer
from core.admin_replies import ESCALATE, REASON_LABELS, Button, FeedbackReason, Reply
from core.catalogue import say
from core.messages import NOT_SET_UP, ConversationKey, Platform
from core.ports import PathNotAllowed
from storage.records.transcripts import SqlTranscriptStore, Vote

ADMIN_LANG = "en"
Progress = Callable[[str, int, int], None]


def parse_review(args: str) -> tuple[str, int | None, str]:
    """"approve 12" -> ("approve", 12, ""); "edit 12 The answer." -> ("edit", 12, "The answer.")."""
    words = args.strip().split(maxsplit=2)
    action = words[0].lower() if words else "list"
    item = int(words[1].lstrip("#")) if len(words) > 1 and words[1].lstrip("#").isdigit() else None
    return action, item, words[2] if len(words) > 2 else ""


def stats_reply(data: dict[str, Any]) -> Reply:
    """The stats every platform shows, in the same words."""
    lang = ADMIN_LANG
    reasons = ", ".join(f"{k} {v}" for k, v in data.get("refusals_by_reason", {}).items()) or "-"
    index = data.get("index", {})
    lines = [
        say("stats_turns", lang, **{k: data.get(k, 0) for k in ("turns", "answered", "refused", "answer_rate",
                                                               "refusal_rate")}),
        say("stats_reasons", lang, reasons=reasons),
        say("stats_latency", lang, **data.get("latency_ms", {"p50": 0, "p95": 0})),
        say("stats_feedback", lang, **data.get("feedback", {"up": 0, "down": 0})),
        say("stats_review", lang, open=data.get("review_queue", 0), unsent=data.get("outbox_pending", 0)),
        say("stats_people", lang, **data.get("escalations", {"escalated": 0, "answered_by_people": 0,
                                                             "turned_into_faq": 0})),
    ]
    if index:
        lines.append(say("stats_index", lang, chunks=index.get("chunks", 0), version=index.get("version", ""),
                         embedder=index.get("embedder", "")))
    for name, run in data.get("sources", {}).items():
        if not run.get("synced"):
            state = say("stats_source_never", lang)
        elif run.get("ok"):
            state = say("stats_source_ok", lang, **{k: run.get(k, 0) for k in ("at", "added", "updated", "removed",
                                                                                "unchanged", "failed")})
        else:
            state = say("stats_source_failed", lang, at=run.get("at", ""), error=str(run.get("error", ""))[:200])
        lines.append(say("stats_source", lang, name=name, kind=run.get("kind", ""), state=state))
    if data.get("scope"):
        lines.insert(0, say("stats_scope", lang, scope=data["scope"]))
    return Reply.of("\n".join(lines))


def feedback_buttons(turn_id: int, lang: str, refused: bool) -> tuple[Button, ...]:
    """The reasons a thumbs-down asks for; a refusal offers only "this should be answerable"."""
    if refused:
        return (Button(say("should_answer_button", lang), FeedbackReason.SHOULD_ANSWER, turn_id),)
    return tuple(Button(say(REASON_LABELS[r], lang), r, turn_id)
                 for r in FeedbackReason if r != FeedbackReason.SHOULD_ANSWER)


class Commands:
    """Parses and runs the admin and feedback commands for any platform."""

    def __init__(self, kb: KnowledgeBase, stats: Callable[[str | None], dict[str, Any]], desk: ReviewDesk,
                 store: SqlTranscriptStore, is_admin: Callable[[str, str], bool], hooks: Hooks,
                 scopes: ScopeMap | None = None, syncer: Syncer | None = None,
                 escalation_offered: Callable[[int], bool] = lambda turn_id: False) -> None:
        self.kb = kb
        self.syncer = syncer
        self.stats = stats
        self.desk = desk
        self.store = store  # votes and the turns they are about
        self.global_admin = is_admin
        self.hooks = hooks
        self.scopes = scopes or ScopeMap()
        self.escalation_offered = escalation_offered  # (turn id) -> whether its chat's experts can be asked

    def scope_of(self, platform: str, chat_id: str) -> str | None:
        """The knowledge scope a command from this chat is about (None: the whole knowledge base,
        also for a chat no scope serves, where only global admins may act)."""
        if not chat_id and platform in (Platform.SLACK, Platform.TELEGRAM):  # a chat platform's command names its chat
            return None
        scope = self.scopes.resolve(ConversationKey(platform, chat_id))
        return None if scope == NOT_SET_UP else scope

    def is_admin(self, platform: str, user_id: str, chat_id: str = "") -> bool:
        """A global admin anywhere; a scope's own admin in the chats of that scope only."""
        return self._admin_of(self.scope_of(platform, chat_id), platform, user_id)

    def _admin_of(self, scope: str | None, platform: str, user_id: str) -> bool:
        return self.global_admin(platform, user_id) or self.scopes.is_admin(scope, platform, str(user_id))

    def run(self, platform: str, user_id: str, name: str, args: str = "", progress: Progress | None = None,
            chat_id: str = "", scope: str | None = None) -> Reply:
        """Run command `name` ("stats", "reingest", "review") with its argument text, sent from
        `chat_id`, which decides the knowledge scope (unless the operator named one: `scope`)."""
        name = name.lstrip("/").lower()
        scope = self.scopes.check(scope) if scope is not None else self.scope_of(platform, chat_id)
        if name == "stats":
            if not self._admin_of(scope, platform, user_id):
                return Reply.of(say("not_admin", ADMIN_LANG, what=say("what_stats", ADMIN_LANG)), ok=False)
            return stats_reply(self.stats(scope))
        if name == "reingest":
            return self.reingest(platform, user_id, args.split() or None, progress, scope)
        if name == "review":
            try:
                action, item, text = parse_review(args)
            except ValueError:
                return Reply.of(say("review_usage", ADMIN_LANG), ok=False)
            return self.desk.handle(platform, user_id, action, item, text)
        raise ValueError(f"unknown command {name!r}")

    def reingest(self, platform: str, user_id: str, paths: list[str] | None, progress: Progress | None,
                 scope: str | None = None) -> Reply:
        """Re-ingest what the chat answers from: its knowledge scope only (`scope`), by that
        scope's admins or the global admins; the whole knowledge base (by global admins) where
        scopes are not used."""
        lang = ADMIN_LANG
        if not self._admin_of(scope, platform, user_id):
            self.hooks.ingested("refused")
            what = say("what_reingest_scope", lang, scope=scope) if scope else say("what_reingest", lang)
            return Reply.of(say("not_admin", lang, what=what), ok=False)
        sources = self.syncer.feeding(scope) if self.syncer is not None else []
        named = [p for p in paths or [] if p in sources]
        others = [p for p in paths or [] if p not in sources]
        try:
            summary = None if named and not others else self.kb.reingest(others or None, progress, scope)
            reports = self.syncer.sync(named or sources, progress) if self.syncer is not None and sources else []
        except PathNotAllowed as exc:
            self.hooks.ingested("refused")
            return Reply.of(say("reingest_refused", lang, why=str(exc)), ok=False)
        except Exception as exc:  # a failed ingest is reported, the bot keeps running
            self.hooks.ingested("failed")
            return Reply.of(say("reingest_failed", lang, why=f"{type(exc).__name__}: {exc}"), ok=False)
        self.hooks.ingested("ok")
        lines = [say("reingest_synced", lang, line=r.line()) for r in reports]
        if summary is not None:
            done = (say("reingest_scope", lang, scope=scope, summary=summary.line()) if scope
                    else say("reingest_done", lang, summary=summary.line()))
            lines.insert(0, done)
        return Reply.of("\n".join(lines), ok=all(r.ok for r in reports))

    def feedback(self, user_id: str, turn_id: int, value: int, reason: str = "", comment: str = "",
                 lang: str = "") -> Reply:
        """A vote; a thumbs-down with a reason (or "should be answerable") joins the review queue.
        Replies are in the turn's language unless `lang` is given."""
        if not lang:
            turn = self.store.turn(turn_id)
            lang = str(turn.get("language") or "en") if turn else "en"
        if reason and reason not in set(FeedbackReason):
            return Reply.of(say("feedback_unknown_reason", lang, reason=reason,
                                choices=", ".join(FeedbackReason)), ok=False)
        stored = self.store.record_feedback(turn_id, user_id, value, comment, reason)
        if not stored:
            return Reply.of(say("feedback_nothing", lang), ok=False)
        if stored != Vote.SAME:  # a reason added to a thumbs-down is the same vote, counted once
            self.hooks.voted(value)
        if value < 0 and not reason:  # a thumbs-down asks why; the answer puts the turn in the queue
            return Reply.of(say("feedback_ask_reason", lang), buttons=feedback_buttons(turn_id, lang, refused=False))
        if value < 0:  # a person can be asked at once where the chat has experts
            self.desk.announce(turn_id)
            ask = (Button(say("escalate_button", lang), ESCALATE, turn_id),) if self.escalation_offered(turn_id) else ()
            return Reply.of(say("feedback_queued", lang), buttons=ask)
        return Reply.of(say("feedback_thanks", lang))
