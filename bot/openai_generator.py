"""Generator port over any OpenAI-compatible chat endpoint, via the `openai` client."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import openai

from core.messages import Generation, Hit

SYSTEM_PROMPT = (
    "You answer questions using ONLY the numbered context passages provided by the user message. "
    "Rules: (1) Every sentence of your answer must be supported by the passages and end with the "
    "citation(s) of the passage(s) it comes from, written like [C1] or [C2][C3]. (2) Do not use any "
    "knowledge that is not in the passages, do not guess, do not add advice or background. (3) Copy "
    "numbers, dates and names exactly as the passages write them. (4) If the passages do not contain "
    "the answer, reply exactly: NOT_IN_CONTEXT. (5) Answer in the language of the question, briefly."
)


def build_context(hits: Sequence[Hit]) -> str:
    """Numbered context [C1]..[Cn], each with its title and heading."""
    parts = []
    for n, h in enumerate(hits, start=1):
        label = " > ".join(p for p in (h.title, h.heading) if p)
        parts.append(f"[C{n}] {label}\n{h.text.strip()}")
    return "\n\n".join(parts)


def build_messages(question: str, hits: Sequence[Hit]) -> list[dict[str, str]]:
    user = f"Context passages:\n\n{build_context(hits)}\n\nQuestion: {question}\n\nAnswer with citations:"
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]


def logprob_confidence(choice: Any) -> float | None:
    """Mean token probability of the answer (exp of mean logprob), or None if absent."""
    lp = getattr(choice, "logprobs", None)
    content = getattr(lp, "content", None) if lp is not None else None
    if not content:
        return None
    values = [t.logprob for t in content if getattr(t, "logprob", None) is not None]
    if not values:
        return None
    return round(math.exp(sum(values) / len(values)), 4)


class OpenAIGenerator:
    """Strict context-only prompting, temperature 0, short timeout, at most one retry."""

    name = "openai"

    def __init__(self, client: openai.OpenAI, model: str, max_tokens: int = 400, logprobs: bool = True) -> None:
        self.client = client
        self.model = model
        self.max_tokens = max_tokens
        self.logprobs = logprobs

    @classmethod
    def from_settings(cls, base_url: str, model: str, api_key: str, timeout_s: float, max_retries: int,
                      max_tokens: int, logprobs: bool) -> OpenAIGenerator:
        client = openai.OpenAI(base_url=base_url, api_key=api_key or "not-needed", timeout=timeout_s,
                               max_retries=max_retries)
        return cls(client, model, max_tokens, logprobs)

    def generate(self, question: str, hits: Sequence[Hit]) -> Generation:
        try:
            resp = self.client.chat.completions.create(
                model=self.model,
                messages=build_messages(question, hits),  # type: ignore[arg-type]
                temperature=0,
                max_tokens=self.max_tokens,
                logprobs=self.logprobs,
            )
        except openai.APIStatusError as exc:
            return Generation(text="", llm_called=True, error=f"HTTP {exc.status_code}")
        except openai.APITimeoutError:
            return Generation(text="", llm_called=True, error="timeout")
        except openai.APIConnectionError:
            return Generation(text="", llm_called=True, error="connection failed")
        except openai.OpenAIError as exc:
            return Generation(text="", llm_called=True, error=type(exc).__name__)
        if not resp.choices:
            return Generation(text="", llm_called=True, error="empty response")
        choice = resp.choices[0]
        text = (choice.message.content or "").strip()
        if text.strip().upper().startswith("NOT_IN_CONTEXT"):
            text = ""
        return Generation(text=text, llm_called=True, confidence=logprob_confidence(choice))
