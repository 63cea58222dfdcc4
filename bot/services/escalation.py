"""Refused questions handed to people, and people's answers turned into FAQ drafts.

Under a refusal (and under an answer its asker marked wrong) the chat offers "Ask a person"
when its scope has experts; a press tags them in the thread, once per turn whichever worker
takes it. An expert's first reply there that answers (not an emoji, not a question back) goes to
the scope's admins as an FAQ draft, the asker's question with the expert's answer; saved as an
FAQ entry it is ingested, so the next person who asks is answered without anyone. The report
counts each step (storage/records/escalations.py)."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable

from bot.services.review import ReviewDesk
from core.messages import ChatPolicy, Escalated, ExpertReply
from core.text.sentences import split_sentences
from storage.records.escalations import Escalations
from storage.records.reviews import ReviewQueue
from storage.records.transcripts import SqlTranscriptStore

log = logging.getLogger(__name__)

_WORD = re.compile(r"[^\W\d_]{2,}")  # a word of two letters or more, in any script
MIN_WORDS = 2


def answers_something(text: str) -> bool:
    """Whether an expert's reply may be an answer: a few words (an emoji, "+1" or "ok" is not),
    and not a question back (its last sentence asks; "Which version are you on?" waits for more)."""
    if len(_WORD.findall(text)) < MIN_WORDS:
        return False
    sentences = split_sentences(text.strip()) or [text.strip()]
    return not re.search(r"[?\u061f\uff1f]\s*$", sentences[-1])


class Escalator:
    """Hands refused turns to a chat's experts and takes their answers to the review queue."""

    def __init__(self, escalations: Escalations, queue: ReviewQueue, desk: ReviewDesk, store: SqlTranscriptStore,
                 policy: Callable[[str, str], ChatPolicy]) -> None:
        self.escalations = escalations
        self.queue = queue
        self.desk = desk
        self.store = store
        self.policy = policy  # (platform, chat) -> ChatPolicy: whose experts

    def escalate(self, platform: str, user_id: str, turn_id: int) -> Escalated | None:
        turn = self.store.turn_row(turn_id)
        if turn is None or turn.platform != platform:
            return None  # a forged or stale button
        experts = self.policy(platform, turn.chat_id).experts
        if not experts:
            return None
        opened = self.escalations.open(turn_id, platform, turn.chat_id, turn.thread_id, user_id)
        log.info("turn %s %s to %d expert(s) of %s", turn_id, "handed" if opened.new else "was handed before",
                 len(experts), turn.chat_id)
        return Escalated(turn.question, experts, opened.new, turn.chat_id, turn.thread_id)

    def offered(self, turn_id: int) -> bool:
        """Whether "Ask a person" is offered for the turn: its chat has experts."""
        turn = self.store.turn_row(turn_id)
        return turn is not None and bool(self.policy(turn.platform, turn.chat_id).experts)

    def counts(self, scope: str | None = None) -> dict[str, int]:
        """Questions escalated, answered by people and turned into FAQ entries (of one scope's turns)."""
        return self.escalations.counts(None if scope is None else self.store.turn_ids(scope))

    def expert_reply(self, platform: str, chat_id: str, thread_id: str, user_id: str, text: str) -> ExpertReply:
        waiting = self.escalations.waiting(platform, chat_id, thread_id)
        if waiting is None or waiting.id is None:
            return ExpertReply.NONE
        if not answers_something(text):
            log.info("an expert's reply in %s is not an answer yet (an emoji or a question back); waiting", thread_id)
            return ExpertReply.NOT_AN_ANSWER
        if not self.escalations.answer(waiting.id, f"{platform}:{user_id}", text.strip()):
            return ExpertReply.NONE  # another expert's (or worker's) answer was taken first
        item = self.queue.add_expert_answer(waiting.turn_id, f"{platform}:{user_id}", text.strip())
        if item is None:
            log.warning("turn %s was reviewed already; the expert's answer is kept on its escalation only",
                        waiting.turn_id)
            return ExpertReply.NONE
        self.desk.announce(waiting.turn_id)
        return ExpertReply.TAKEN
