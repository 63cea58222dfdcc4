"""Small fakes at core's ports (Embedder, ChunkIndex, Generator, TranscriptStore)."""

from __future__ import annotations

import contextlib
import functools
import hashlib
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from core.messages import ConversationKey, Decision, Generation, Hit, PriorTurn, Suggestion, section_label
from core.ports import ConversationState, ConversationTurn
from core.settings import Mode
from core.text.lexicon import content_terms


class BagOfWordsEmbedder:
    """Deterministic hashed bag-of-words vectors: similar words -> similar vectors."""

    name = "bow"
    dim = 64

    def _vec(self, text: str) -> np.ndarray:
        v = np.zeros(self.dim, dtype=np.float32)
        for t in content_terms(text):
            v[int(hashlib.md5(t.encode()).hexdigest(), 16) % self.dim] += 1.0
        n = np.linalg.norm(v)
        return v / n if n else v

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return np.stack([self._vec(t) for t in texts]) if texts else np.zeros((0, self.dim), np.float32)

    embed_passages = embed_queries


def hit(text: str, sim: float = 0.8, *, n: int = 0, kind: str = "doc", heading: str = "", faq_answer: str = "") -> Hit:
    return Hit(chunk_id=f"c{n}", doc_id=f"d{n}", source=f"/kb/d{n}.md", title=f"Doc {n}", heading=heading,
               text=text, similarity=sim, kind=kind, faq_question=text if kind == "faq" else "",
               faq_answer=faq_answer, position=n)


class ListIndex:
    """ChunkIndex over a list of texts, scored with the given embedder."""

    def __init__(self, texts: Sequence[str], embedder: BagOfWordsEmbedder, suggestions: Sequence[str] = ()) -> None:
        self.embedder = embedder
        self.texts = list(texts)
        self.vecs = embedder.embed_passages(self.texts)
        self.sugg = list(suggestions)
        self.searches = 0
        self.verdicts: dict[str, dict[str, bool]] = {}  # decided_at -> stored suggestion verdicts
        self.scopes: list[str | None] = []  # the knowledge scope of each search

    def search(self, query_text: str, query_vector: np.ndarray, k: int, scope: str | None = None) -> list[Hit]:
        self.searches += 1
        self.scopes.append(scope)
        sims = self.vecs @ query_vector
        order = np.argsort(-sims, kind="stable")[:k]
        return [hit(self.texts[i], float(sims[i]), n=int(i)) for i in order]

    def version(self) -> str:
        return "v1"

    def suggestion_candidates(self, query_vector: np.ndarray, limit: int,
                              scope: str | None = None) -> list[tuple[str, np.ndarray]]:
        pairs = [(s, self.embedder.embed_queries([s])[0]) for s in self.sugg]
        return sorted(pairs, key=lambda p: -float(p[1] @ query_vector))[:limit]

    def suggestion_texts(self, limit: int, scope: str | None = None) -> list[str]:
        return list(self.sugg)[:limit]

    def unmentioned(self, words: Sequence[str], scope: str | None = None) -> list[str]:
        """As the full-text index matches words: by their stems."""
        held = {t for text in self.texts for t in content_terms(text)}
        return [w for w in words if not set(content_terms(w)) <= held]

    def suggestion_verdicts(self, decided_at: str) -> dict[str, bool]:
        return dict(self.verdicts.get(decided_at, {}))

    def save_suggestion_verdicts(self, decided_at: str, verdicts: dict[str, bool]) -> None:
        self.verdicts = {decided_at: dict(verdicts)}


class QueueGenerator:
    """A generator that returns `enqueue()`d answers and records what it was asked."""

    name = "queue"
    mode = Mode.LANGUAGE_MODEL  # it stands in for a language model: every claim is verified after

    def __init__(self) -> None:
        self.queue: list[Generation] = []
        self.calls: list[tuple[str, list[Hit]]] = []

    def enqueue(self, text: str, confidence: float | None = None, error: str = "") -> None:
        self.queue.append(Generation(text=text, llm_called=True, confidence=confidence, error=error))

    def generate(self, question: str, hits: Sequence[Hit], reading: str = "") -> Generation:
        self.calls.append((question, list(hits)))
        return self.queue.pop(0)


class MemoryStore:
    """TranscriptStore in memory."""

    def __init__(self) -> None:
        self.states: dict[str, str] = {}
        self.turns: list[tuple[ConversationKey, str, Decision]] = []
        self.suggestions: dict[int, str] = {}
        self.feedback: list[tuple[int, str, int]] = []
        self.fail_next = 0

    @contextlib.contextmanager
    def begin_turn(self, key: ConversationKey, history_turns: int) -> Iterator[ConversationTurn]:
        yield ConversationTurn(key, self.load_conversation(key, history_turns), functools.partial(self.record_turn, key))

    def load_conversation(self, key: ConversationKey, history_turns: int) -> ConversationState:
        history = [PriorTurn(d.question, d.answer, d.resolved_question, d.scope or "",
                             section_label(d.sources[0].title, d.sources[0].heading) if d.sources else "")
                   for k, _, d in self.turns if k == key][-history_turns:] if history_turns else []
        return ConversationState(key, self.states.get(key.as_str(), "idle"), history)

    def record_turn(self, key: ConversationKey, user_id: str, team_id: str, decision: Decision,
                    new_state: str) -> tuple[int | None, list[Suggestion]]:
        if self.fail_next:
            self.fail_next -= 1
            raise RuntimeError("database is locked")
        self.states[key.as_str()] = new_state
        self.turns.append((key, user_id, decision))
        stored = []
        for s in decision.suggestions:
            sid = len(self.suggestions) + 1
            self.suggestions[sid] = s.text
            stored.append(Suggestion(sid, s.text))
        return len(self.turns), stored

    def suggestion_text(self, suggestion_id: int) -> str | None:
        return self.suggestions.get(suggestion_id)

    def record_feedback(self, turn_id: int, user_id: str, value: int, comment: str = "") -> bool:
        self.feedback.append((turn_id, user_id, value))
        return True

    def stats(self) -> dict[str, Any]:
        return {"turns": len(self.turns)}
