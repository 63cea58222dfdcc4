"""build_app(): the one place that constructs concrete clients and wires the pipeline."""

from __future__ import annotations

import gc
import logging
import re
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from bot.config import Config
from bot.openai_generator import OpenAIGenerator
from bot.outbox import Courier
from core.extractive import ExtractiveGenerator
from core.messages import Decision, Incoming
from core.pipeline import Pipeline
from core.ports import AnswerJudge, ClaimJudge, Delivery, Embedder, Generator, PathNotAllowed
from core.profiles import apply_profile, load_profile
from core.replies import Reply
from storage.chunk_index import LanceChunkIndex
from storage.embedders import make_embedder
from storage.ingest import IngestSummary, Progress, ingest
from storage.outbox import Outbox
from storage.spool import TurnSpool
from storage.transcripts import SqlTranscriptStore

if TYPE_CHECKING:
    from bot.commands import Commands

log = logging.getLogger(__name__)


class NotAdmin(PermissionError):
    """Raised when a non-admin asks for an admin command; nothing has run."""


@dataclass
class App:
    config: Config
    pipeline: Pipeline
    store: SqlTranscriptStore
    index: LanceChunkIndex
    embedder: Embedder
    _ingest_lock: threading.Lock = field(default_factory=threading.Lock)
    # how a reviewed answer reaches its conversation: each running adapter registers itself
    deliveries: dict[str, Delivery] = field(default_factory=dict)
    _commands: Commands | None = None
    _courier: Courier | None = None

    def ask(self, msg: Incoming) -> Decision:
        decision = self.pipeline.handle(msg)
        if decision.state == "pending_review" and decision.turn_id is not None:
            try:  # admins hear of a held draft at once; the user's reply does not wait on it failing
                self.commands.desk.announce(decision.turn_id)
            except Exception as exc:
                log.warning("held turn %s: admins not notified: %s", decision.turn_id, exc)
        return decision

    def ingest(self, paths: Sequence[str | Path] | None = None, progress: Progress | None = None) -> IngestSummary:
        """Ingest `paths` (default: config kb_paths); one ingest at a time per process."""
        chosen = [Path(p) for p in (paths or self.config.kb_paths)]
        with self._ingest_lock:
            return ingest(chosen, self.index, self.embedder, self.config.chunking, progress)

    def ensure_ingested(self, progress: Progress | None = None) -> IngestSummary | None:
        """Ingest the configured KB when the index is empty (first run); else do nothing."""
        if self.index.count() > 0:
            return None
        return self.ingest(progress=progress)

    # -- admin commands (every platform goes through these) -------------------------
    def require_admin(self, platform: str, user_id: str) -> None:
        if not self.config.is_admin(platform, user_id):
            raise NotAdmin(f"user {user_id} on {platform} is not a groundbot admin")

    def admin_reingest(self, platform: str, user_id: str, paths: Sequence[str] | None = None,
                       progress: Progress | None = None) -> IngestSummary:
        """Re-ingest for an admin in chat: the configured KB, or paths inside the allowed roots."""
        self.require_admin(platform, user_id)
        allowed = self.reingest_paths(paths) if paths else None
        return self.ingest(allowed, progress)

    def reingest_roots(self) -> list[Path]:
        """Where chat re-ingest may read: kb_paths and reingest_roots, resolved."""
        return [Path(r).resolve() for r in (*self.config.kb_paths, *self.config.reingest_roots)]

    def reingest_paths(self, paths: Sequence[str]) -> list[Path]:
        """The resolved paths, if every one lies inside an allowed root; else PathNotAllowed.

        A chat account must not make the bot read arbitrary files (/etc/..., ../ escapes, a
        symlink in the KB pointing out of it), so each path is resolved with symlinks followed
        and checked against the roots before anything is read; one bad path refuses them all.
        The resolved paths, not the names given, are what gets ingested. Outside the roots, a
        missing path gets the same answer as an existing one: chat does not learn what exists
        elsewhere on the machine.
        """
        roots = self.reingest_roots()
        where = ", ".join(str(r) for r in roots) or "(none configured)"

        def inside(p: Path | None) -> bool:
            return p is not None and any(p.is_relative_to(root) for root in roots)

        chosen: list[Path] = []
        for raw in paths:
            given = Path(raw)
            try:
                resolved = given.resolve(strict=True)
            except (OSError, RuntimeError) as exc:  # missing, a symlink loop, an unreadable folder
                try:
                    loose: Path | None = given.resolve()
                except (OSError, RuntimeError):
                    loose = None
                if not inside(loose):
                    raise PathNotAllowed(self._outside(raw, where)) from None
                if isinstance(exc, FileNotFoundError):
                    raise PathNotAllowed(f"{raw} does not exist; nothing was ingested.") from None
                raise PathNotAllowed(f"{raw} cannot be read ({type(exc).__name__}); nothing was ingested.") from None
            if not inside(resolved):
                raise PathNotAllowed(self._outside(raw, where))
            chosen.append(resolved)
        return chosen

    @staticmethod
    def _outside(raw: str, where: str) -> str:
        return (f"{raw} is outside the folders admins may re-ingest from chat ({where}); nothing was "
                "ingested. The operator can allow more in config.toml, [paths] reingest_roots.")

    def admin_stats(self, platform: str, user_id: str) -> dict[str, Any]:
        self.require_admin(platform, user_id)
        return self.stats()

    def admin_review_queue(self, platform: str, user_id: str) -> list[dict[str, Any]]:
        """The open review items as rows (for front ends that list them without the command layer)."""
        self.require_admin(platform, user_id)
        return [{"id": e.id, "turn_id": e.turn_id, "question": e.question, "draft": e.draft}
                for e in self.commands.desk.queue.entries()]

    @property
    def commands(self) -> Commands:
        """Admin, review and feedback commands (bot/commands.py), the same for every platform."""
        if self._commands is None:
            from bot.commands import Commands

            self._commands = Commands(self)
        return self._commands

    def command(self, platform: str, user_id: str, name: str, args: str = "",
                progress: Progress | None = None) -> Reply:
        return self.commands.run(platform, user_id, name, args, progress)

    def review(self, platform: str, user_id: str, action: str, item_id: int | None, text: str = "") -> Reply:
        return self.commands.desk.handle(platform, user_id, action, item_id, text)

    def feedback(self, user_id: str, turn_id: int, value: int, reason: str = "", comment: str = "",
                 lang: str = "") -> Reply:
        return self.commands.feedback(user_id, turn_id, value, reason, comment, lang)

    def register_delivery(self, platform: str, delivery: Delivery) -> None:
        """A platform this process can send to; its reviewed answers waiting in the outbox are
        sent (and retried) from now on by this process's courier."""
        self.deliveries[platform] = delivery
        self.courier.start()

    @property
    def courier(self) -> Courier:
        """Sends reviewed decisions from the outbox (bot/outbox.py); one per process."""
        if self._courier is None:
            every = self.config.core.review.retry_seconds
            self._courier = Courier(Outbox(self.store.engine, backoff_s=max(every, 0.1)), self.deliveries, every)
        return self._courier

    def record_feedback(self, turn_id: int, user_id: str, value: int, comment: str = "", reason: str = "") -> bool:
        return self.store.record_feedback(turn_id, user_id, value, comment, reason)

    def save_faq(self, question: str, answer: str, reviewer: str) -> IngestSummary:
        """Add a reviewed question/answer pair to the knowledge base through the normal
        incremental ingest: one FAQ file per reviewer under data_dir/reviewed (the file's title
        names the reviewer, and is what the answer cites)."""
        folder = self.config.data_dir / "reviewed"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"reviewed-by-{re.sub(r'[^A-Za-z0-9]+', '-', reviewer).strip('-')}.yaml"
        with self._ingest_lock:
            data = yaml.safe_load(path.read_text(encoding="utf-8")) if path.is_file() else None
            pairs = list((data or {}).get("faq") or [])
            pairs.append({"question": question, "answer": answer})
            path.write_text(yaml.safe_dump({"faq": pairs}, allow_unicode=True, sort_keys=False), encoding="utf-8")
        return self.ingest([folder])

    def is_admin(self, platform: str, user_id: str) -> bool:
        return self.config.is_admin(platform, user_id)

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

    def stats(self) -> dict[str, Any]:
        data = self.store.stats()
        data["index"] = {"chunks": self.index.count(), "version": self.index.version(),
                         "embedder": self.embedder.name}
        try:  # reviewed answers still in the outbox: none should stay there long
            data["outbox_pending"] = self.courier.outbox.pending_count()
        except Exception as exc:
            log.warning("outbox not read for stats: %s", exc)
        return data


def with_embedder_profile(config: Config, embedder_name: str) -> Config:
    """The config with the similarity thresholds of the embedder's calibrated profile, except
    those config.toml sets explicitly (see core/profiles.py)."""
    return replace(config, core=apply_profile(config.core, load_profile(embedder_name), config.threshold_overrides))


def make_judge(config: Config, embedder_name: str) -> AnswerJudge | None:
    """The answerability judge of [judge] (storage/answer_judge.py), or None when it is disabled.
    Its model is English: it judges quotes for the minilm embedder's knowledge bases only."""
    if not config.core.judge.enabled or embedder_name != "minilm":
        return None
    from storage.answer_judge import OnnxAnswerJudge

    return OnnxAnswerJudge()


def make_claim_judge(config: Config, embedder_name: str) -> ClaimJudge | None:
    """The claim judge of [judge] claims (storage/claim_judge.py) for generated answers, or None
    when it is off, the generator is extractive, or the knowledge base is not English (minilm)."""
    j = config.core.judge
    if not (j.enabled and j.claims) or config.generator == "extractive" or embedder_name != "minilm":
        return None
    from storage.claim_judge import OnnxClaimJudge

    return OnnxClaimJudge()


def make_generator(config: Config, embedder_name: str, judge: AnswerJudge | None = None) -> Generator:
    if config.generator == "extractive":
        return ExtractiveGenerator(config.core.extractive, judge, config.core.judge)
    if config.generator == "openai":
        o = config.openai
        return OpenAIGenerator.from_settings(o.base_url, o.model, config.secret(o.api_key_env), o.timeout_s,
                                             o.max_retries, o.max_tokens, o.logprobs)
    raise ValueError(f"unknown generator {config.generator!r}; expected 'extractive' or 'openai'")


def build_app(
    config: Config,
    *,
    generator: Generator | None = None,
    embedder: Embedder | None = None,
    store: SqlTranscriptStore | None = None,
    clock: Callable[[], float] | None = None,
    judge: AnswerJudge | None = None,
) -> App:
    """Wire storage, embedder, generator and pipeline from one Config."""
    config.data_dir.mkdir(parents=True, exist_ok=True)
    emb: Any = embedder or make_embedder(config.embedder, config.embed_batch_size)
    config = with_embedder_profile(config, emb.name)
    r = config.core.retrieval
    index = LanceChunkIndex(config.index_location, emb.dim, emb.name, candidates=r.candidates, rrf_k=r.rrf_k,
                            storage_options=config.index_storage_options(), search=config.search_index)
    st = store or SqlTranscriptStore(config.db_url, spool=TurnSpool(config.spool_path),
                                     lock_budget_s=config.lock_budget_s)
    try:  # turns spooled while the database was away go in first
        st.replay_spool()
    except Exception as exc:
        log.warning("spooled turns not replayed yet: %s", str(exc).splitlines()[0][:200])
    gen = generator or make_generator(config, emb.name, judge or make_judge(config, emb.name))
    kwargs: dict[str, Any] = {"clock": clock} if clock else {}
    pipeline = Pipeline(config.core, emb, index, gen, st, claim_judge=make_claim_judge(config, emb.name), **kwargs)
    return App(config=config, pipeline=pipeline, store=st, index=index, embedder=emb)


def settle_heap() -> None:
    """Move everything loaded so far (models, tokenizers, libraries: over 600k objects) out of the
    garbage collector's reach. They live as long as the process, yet every full collection walked
    them all, with the GIL held: one took 0.85 s in a run of 400 turns over 16 conversations,
    stalling every conversation at once. Called once a long-running process is ready."""
    gc.collect()
    gc.freeze()


def ready_app(config: Config, progress: Progress | None = None) -> App:
    """The App every long-running front end starts with: built, and the configured KB ingested
    on first run (with a notice on stderr, so a new user knows what happened)."""
    app = build_app(config)
    summary = app.ensure_ingested(progress=progress)
    if summary is not None:
        print("The knowledge base was empty; ingested", ", ".join(config.kb_paths) + ":", summary.line(),
              file=sys.stderr)
    settle_heap()
    return app
