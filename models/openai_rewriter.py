"""Rewriter port over any OpenAI-compatible chat endpoint: a follow-up and the turns before it in,
one standalone question out.

One short request per turn with earlier turns, temperature 0, its own small deadline, no retry:
a rewrite that is late, fails or reads like an answer is dropped, and the local resolver's reading
stands (core/retrieve/search.py checks what comes back). The earlier answers are sent cut short:
the model needs their topic, not their text.
"""

from __future__ import annotations

from collections.abc import Sequence

import openai

from core.messages import PriorTurn

SYSTEM_PROMPT = (
    "You rewrite the user's last question so that it can be understood without the conversation. "
    "Replace pronouns and elliptical phrases with what they refer to in the earlier turns, keep the user's "
    "wording and language, add nothing the conversation does not say, and do not answer. If the question "
    "already stands on its own, return it unchanged. Reply with the rewritten question only, on one line."
)
ANSWER_CHARS = 300  # of each earlier answer: its topic, not its text


def build_messages(question: str, earlier: Sequence[PriorTurn]) -> list[dict[str, str]]:
    turns = "\n".join(f"User: {t.meant}\nAssistant: {' '.join(t.answer.split())[:ANSWER_CHARS] or '(no answer)'}"
                      for t in earlier)
    user = f"Conversation so far:\n{turns}\n\nLast question: {question}\n\nRewritten question:"
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]


class OpenAIRewriter:
    """The language model's rewrite of a follow-up; raises on any failure (the caller falls back)."""

    def __init__(self, client: openai.OpenAI, model: str, timeout_s: float = 2.0, max_tokens: int = 80) -> None:
        self.client = client.with_options(max_retries=0, timeout=timeout_s)
        self.model = model
        self.max_tokens = max_tokens

    @classmethod
    def from_settings(cls, base_url: str, model: str, api_key: str, timeout_s: float) -> OpenAIRewriter:
        client = openai.OpenAI(base_url=base_url, api_key=api_key or "not-needed", timeout=timeout_s, max_retries=0)
        return cls(client, model, timeout_s=timeout_s)

    def rewrite(self, question: str, earlier: Sequence[PriorTurn]) -> str:
        resp = self.client.chat.completions.create(
            model=self.model, messages=build_messages(question, earlier),  # type: ignore[arg-type]
            temperature=0, max_tokens=self.max_tokens)
        choice = resp.choices[0]
        if getattr(choice, "finish_reason", None) == "length":
            raise ValueError("the rewrite was cut off at max_tokens")
        content = choice.message.content
        if not isinstance(content, str):
            raise ValueError("the rewrite holds no text")
        return content.strip().strip('"“”').strip()
