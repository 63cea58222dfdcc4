"""The ports core needs from the outside world, as Protocols.

storage/ and bot/ implement them; tests use small fakes. core never imports the
concrete implementations.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from core.admin_replies import Reply
from core.messages import (
    ChatPolicy,
    ConversationKey,
    Decision,
    Escalated,
    ExpertReply,
    Generation,
    Hit,
    Incoming,
    Platform,
    PriorTurn,
    Suggestion,
)
from core.settings import Mode


class Embedder(Protocol):
    """Turns texts into unit-length vectors."""

    name: str
    dim: int

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray: ...

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray: ...


class ChunkIndex(Protocol):
    """Hybrid (vector + full-text) search over ingested chunks. `scope` (a knowledge scope's
    name; None = the whole index) filters inside the index: a chunk outside it is never read."""

    def search(self, query_text: str, query_vector: np.ndarray, k: int, scope: str | None = None) -> list[Hit]: ...

    def version(self) -> str: ...

    def unmentioned(self, words: Sequence[str], scope: str | None = None) -> list[str]:
        """The `words` that no chunk (of `scope`) holds, as the index's full-text search matches
        words (stemmed): a question about something the knowledge base never mentions is not
        answered from it. A word the index cannot look up counts as mentioned."""
        ...

    def suggestion_candidates(self, query_vector: np.ndarray, limit: int,
                              scope: str | None = None) -> list[tuple[str, np.ndarray]]:
        """The `limit` (question-like text, vector) pairs nearest `query_vector`, best first:
        FAQ questions and section headings. An index answers from a small table or index of
        its own; it never reads every chunk."""
        ...

    def suggestion_texts(self, limit: int, scope: str | None = None) -> list[str]:
        """Up to `limit` of the suggestions (FAQ questions, headings) the index holds, to check
        ahead of the refusals that would offer them."""
        ...

    def suggestion_verdicts(self, decided_at: str) -> dict[str, bool]:
        """The stored answers to "would this suggestion be answered?" (normalised text -> bool)
        decided at `decided_at` (an index version and a configuration); empty when none were
        stored for it, so every process of a deployment reads what one decided."""
        ...

    def save_suggestion_verdicts(self, decided_at: str, verdicts: dict[str, bool]) -> None:
        """Store `verdicts` as decided at `decided_at`, replacing any stored before."""
        ...


class Generator(Protocol):
    """Produces an answer with [C#] citations from numbered context chunks."""

    name: str
    mode: Mode  # quotes the sources or asks a language model: which settings the stages read (core.settings.for_mode)

    def generate(self, question: str, hits: Sequence[Hit], reading: str = "") -> Generation:
        """`question` is the one the answer is held to (the user's, or a language model's rewrite);
        `reading`, when a later turn was read with earlier words (core/retrieve/resolve.py), is
        that reading: a quoting generator may weigh its words in choosing what to quote."""
        ...


class Rewriter(Protocol):
    """A language model's rewrite of a follow-up into a question of its own, given the earlier
    turns (models/openai_rewriter.py): raises on any failure; core/retrieve/search.py
    checks what it returns before it stands for the question, and falls back to the local resolver."""

    def rewrite(self, question: str, earlier: Sequence[PriorTurn]) -> str: ...


class TermSelector(Protocol):
    """The term selector: for each earlier word of a conversation (as core/retrieve/terms.py lays
    them out), the probability (0..1) that the follow-up `question` needs it to stand on its own.
    models/term_selector.py implements it."""

    def probabilities(self, history: Sequence[str], question: Sequence[str]) -> list[float]: ...


class PassageReader(Protocol):
    """The passage reader: for each passage (a retrieved chunk as core/gate/reader_view.py shows it), the
    probability (0..1) that it answers the question. A passage's probability depends on the question
    and the passage alone, not on what else the call reads, so the pipeline may read a question's
    passages in more than one call. models/reader.py implements it."""

    def score(self, question: str, passages: Sequence[str]) -> list[float]: ...


class ClaimJudge(Protocol):
    """The claim judge: for each (claim, evidence text) of an answer, the probability (0..1) that
    the evidence states the claim as the answer to the question. models/claim_judge.py
    implements it; the verifier runs it after the lexical checks (core/verify/claim_checks.py)."""

    def score(self, question: str, claims: Sequence[tuple[str, str]]) -> list[float]: ...


@dataclass(frozen=True)
class Models:
    """The models a turn runs, held together so that a pipeline is built from a few parts: the
    embedder and the generator always; each of the others is optional (None: that step is left
    to the local rules), and the settings may still turn it off (core/turn/pipeline.py)."""

    embedder: Embedder
    generator: Generator
    reader: PassageReader | None = None
    claim_judge: ClaimJudge | None = None
    rewriter: Rewriter | None = None  # a language model's rewrite of follow-ups
    term_selector: TermSelector | None = None


@dataclass
class ConversationState:
    """What core needs to know about a conversation between turns."""

    key: ConversationKey
    state: str
    history: list[PriorTurn]  # previous turns, oldest first


@dataclass
class ConversationTurn:
    """One turn's unit of work on its conversation (`TranscriptStore.begin_turn`): the
    conversation as the turn found it, None when the store could not read it within its
    budget (the turn then runs without history), and `record`, which writes the turn, its
    suggestions and the conversation's new state together, in one transaction.

    `record(user_id, team_id, decision, new_state)` returns the turn id and the suggestion ids;
    a store that keeps the turn somewhere durable other than its database (a spool it replays
    later) returns no turn id; it raises only when the turn is recorded nowhere."""

    key: ConversationKey
    found: ConversationState | None
    record: Callable[[str, str, Decision, str], tuple[int | None, list[Suggestion]]]


class TranscriptStore(Protocol):
    """Persists conversations, turns (decision records) and the suggestions offered with them."""

    def begin_turn(self, key: ConversationKey, history_turns: int) -> AbstractContextManager[ConversationTurn]:
        """`with store.begin_turn(key, n) as conversation:` the turn's read and write of its
        conversation; retries for a busy database happen in the store, and entering never raises."""
        ...

    def suggestion_text(self, suggestion_id: int) -> str | None: ...



class PathNotAllowed(PermissionError):
    """A path given in chat to re-ingest is missing or outside the allowed roots; nothing was read.

    Chat admins may only re-ingest what the operator allowed (kb_paths, reingest_roots), so a
    chat account cannot turn the bot into a reader of arbitrary files. The message is meant
    for the admin as is. It subclasses PermissionError: catch it before the not-admin case.
    """


class Backend(Protocol):
    """What a chat adapter may ask of the bot (bot.app.App implements it)."""

    def ask(self, msg: Incoming) -> Decision: ...

    def command(self, platform: Platform, user_id: str, name: str, args: str = "",
                progress: Callable[[str, int, int], None] | None = None, chat_id: str = "",
                scope: str | None = None) -> Reply:
        """An admin command ("stats", "reingest", "review") as its platform-neutral reply
        (bot/services/commands.py); non-admins get a refusal and nothing runs. The chat it was
        sent from (or a `scope` the operator named) decides the knowledge scope it acts on."""
        ...

    def review(self, platform: Platform, user_id: str, action: str, item_id: int | None, text: str = "") -> Reply:
        """A review button: show, approve, edit (with text), reject or faq one queue item."""
        ...

    def feedback(self, user_id: str, turn_id: int, value: int, reason: str = "", comment: str = "",
                 lang: str = "") -> Reply:
        """A vote on a turn; a thumbs-down with a reason puts it in the review queue."""
        ...

    def register_delivery(self, platform: Platform, delivery: Delivery) -> None:
        """How reviewed answers reach this platform's conversations (the running adapter)."""
        ...

    def is_admin(self, platform: Platform, user_id: str, chat_id: str = "") -> bool:
        """A global admin; in a knowledge scope's chat, also that scope's own admins."""
        ...

    def chat_policy(self, platform: Platform, chat_id: str) -> ChatPolicy:
        """Which messages of a group chat are answered, and how a refusal there shows."""
        ...

    def escalate(self, platform: Platform, user_id: str, turn_id: int) -> Escalated | None:
        """Hand a turn to the experts of the chat it was asked in ("Ask a person"), once per turn;
        None when that chat has no experts or the turn is not one of this platform's."""
        ...

    def expert_reply(self, platform: Platform, chat_id: str, thread_id: str, user_id: str, text: str) -> ExpertReply:
        """An expert of the chat replied in a thread: when it holds a question handed to people
        and the reply answers (not an emoji, not a question back), it becomes an FAQ draft in the
        review queue."""
        ...

    def prompts(self, platform: Platform, chat_id: str, limit: int = 4) -> list[str]:
        """Questions to suggest to someone who opens a conversation: the most asked answered ones,
        then the knowledge base's own questions (FAQ entries, headings that ask), of the chat's scope."""
        ...


class Delivery(Protocol):
    """Sends a decision made outside a turn (a reviewed answer) to the conversation it belongs
    to: console prints it, Telegram sends it to the chat (and thread), Slack posts it in the thread."""

    def deliver(self, key: ConversationKey, decision: Decision) -> None: ...

    def notify(self, reply: Reply, users: Sequence[str] = ()) -> None:
        """Post a new review-queue item (its card, with buttons) to this platform's admins, and
        to `users` (this platform's ids of the admins of the scope the question was asked in)."""
        ...
