"""Generator port over any OpenAI-compatible chat endpoint, via the `openai` client."""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Sequence
from typing import Any

import openai
import tenacity

from core.messages import Generation, Hit
from core.settings import Mode
from core.text.citations import marker

log = logging.getLogger(__name__)

SYSTEM_PROMPT = (
    "You answer questions using ONLY the numbered context passages provided by the user message. "
    "Rules: (1) Every sentence of your answer must be supported by the passages and end with the "
    f"citation(s) of the passage(s) it comes from, written like {marker(1)} or {marker(2, 3)}. (2) Do not use any "
    "knowledge that is not in the passages, do not guess, do not add advice or background. (3) Copy "
    "numbers, dates and names exactly as the passages write them. (4) If the passages do not contain "
    "the answer, reply exactly: NOT_IN_CONTEXT. (5) Answer in the language of the question, briefly."
)


def build_context(hits: Sequence[Hit]) -> str:
    """Numbered context [C1]..[Cn], each with its title and heading."""
    parts = []
    for n, h in enumerate(hits, start=1):
        label = " > ".join(p for p in (h.title, h.heading) if p)
        parts.append(f"{marker(n)} {label}\n{h.text.strip()}")
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


MIN_ATTEMPT_S = 0.05  # a request given less than this would only time out
BACKOFF_INITIAL_S = 0.25  # a 429 or 5xx is retried after this (doubling, with jitter), never past the deadline
BACKOFF_MAX_S = 2.0


def _timed_out() -> Generation:
    return Generation(text="", llm_called=True, error="timeout")


class _Past(tenacity.stop.stop_base):
    """Stop retrying once the answer's deadline leaves no time for another request."""

    def __init__(self, deadline: float, clock: Callable[[], float]) -> None:
        self.deadline, self.clock = deadline, clock

    def __call__(self, retry_state: tenacity.RetryCallState) -> bool:
        return self.deadline - self.clock() <= MIN_ATTEMPT_S


def _backoff_within(deadline: float, clock: Callable[[], float]) -> tenacity.wait.wait_base:
    """Exponential backoff with jitter (a rate-limited endpoint is not hit again at once), cut so
    that the wait leaves half of the remaining time for the retry itself."""
    backoff = (tenacity.wait_exponential(multiplier=BACKOFF_INITIAL_S, max=BACKOFF_MAX_S)
               + tenacity.wait_random(0, BACKOFF_INITIAL_S))

    class _Within(tenacity.wait.wait_base):
        def __call__(self, retry_state: tenacity.RetryCallState) -> float:
            return max(0.0, min(backoff(retry_state), (deadline - clock()) / 2))

    return _Within()


def _one_line(exc: BaseException) -> str:
    return (str(exc).splitlines() or [""])[0][:200]


class OpenAIGenerator:
    """Strict context-only prompting, temperature 0, one deadline per turn, at most one retry.

    `timeout_s` bounds the whole generation, retry included: the client's own retries are
    off, a retry (tenacity: after a 429, a 5xx or a lost connection) waits a backoff with jitter
    first, and gets only the time the first attempt and the wait left. A failure of any kind (an
    HTTP error, a timeout, a body that is not a chat completion, an answer cut off at the
    token limit) becomes `Generation.error` (-> LLM_UNAVAILABLE), logged as one line, and
    the record says whether a request was sent.
    """

    name = "openai"
    mode = Mode.LANGUAGE_MODEL

    def __init__(self, client: openai.OpenAI, model: str, max_tokens: int = 400, logprobs: bool = True,
                 timeout_s: float = 8.0, max_retries: int = 1, clock: Callable[[], float] = time.monotonic) -> None:
        self.client = client.with_options(max_retries=0)
        self.model = model
        self.max_tokens = max_tokens
        self.logprobs = logprobs
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.clock = clock

    @classmethod
    def from_settings(cls, base_url: str, model: str, api_key: str, timeout_s: float, max_retries: int,
                      max_tokens: int, logprobs: bool) -> OpenAIGenerator:
        client = openai.OpenAI(base_url=base_url, api_key=api_key or "not-needed", timeout=timeout_s, max_retries=0)
        return cls(client, model, max_tokens, logprobs, timeout_s=timeout_s, max_retries=max_retries)

    def generate(self, question: str, hits: Sequence[Hit], reading: str = "") -> Generation:
        deadline = self.clock() + self.timeout_s
        messages = build_messages(question, hits)
        retrying = tenacity.Retrying(
            stop=tenacity.stop_after_attempt(1 + max(0, self.max_retries)) | _Past(deadline, self.clock),
            wait=_backoff_within(deadline, self.clock),
            retry=tenacity.retry_if_result(lambda outcome: bool(outcome[0].error) and outcome[1]),
            before_sleep=lambda state: log.warning("LLM request %d failed: %s", state.attempt_number,
                                                   state.outcome.result()[0].error if state.outcome else "?"),
            retry_error_callback=lambda state: state.outcome.result() if state.outcome else (_timed_out(), False),
        )
        gen, _ = retrying(self._attempt_by, messages, deadline)
        return gen

    def _attempt_by(self, messages: list[dict[str, str]], deadline: float) -> tuple[Generation, bool]:
        """One request with the time the deadline leaves, or a timeout when too little is left."""
        left = deadline - self.clock()
        if left <= MIN_ATTEMPT_S:
            return _timed_out(), False
        return self._attempt(messages, left)

    def _attempt(self, messages: list[dict[str, str]], timeout: float) -> tuple[Generation, bool]:
        """One request within `timeout` seconds; (generation, whether a retry may help)."""
        try:
            resp = self.client.with_options(timeout=timeout).chat.completions.create(
                model=self.model,
                messages=messages,  # type: ignore[arg-type]
                temperature=0,
                max_tokens=self.max_tokens,
                logprobs=self.logprobs,
            )
        except openai.APIStatusError as exc:
            retry = exc.status_code == 429 or exc.status_code >= 500
            return Generation(text="", llm_called=True, error=f"HTTP {exc.status_code}"), retry
        except openai.APITimeoutError:
            return Generation(text="", llm_called=True, error="timeout"), False
        except openai.APIConnectionError:
            return Generation(text="", llm_called=True, error="connection failed"), True
        except Exception as exc:  # a body that is not a chat completion: the client raised while parsing it
            log.warning("LLM returned a malformed response: %s: %s", type(exc).__name__, _one_line(exc))
            return Generation(text="", llm_called=True, error=f"malformed response ({type(exc).__name__})"), False
        return self._parse(resp), False

    def _parse(self, resp: Any) -> Generation:
        try:
            choice = resp.choices[0]
            content = choice.message.content
            finish = getattr(choice, "finish_reason", None)
        except (AttributeError, IndexError, TypeError) as exc:
            log.warning("LLM returned a malformed response: %s", type(exc).__name__)
            return Generation(text="", llm_called=True, error="malformed response (no answer in it)")
        if content is not None and not isinstance(content, str):
            log.warning("LLM returned a malformed response: content is %s", type(content).__name__)
            return Generation(text="", llm_called=True, error="malformed response (content is not text)")
        if finish == "length":
            log.warning("LLM answer cut off at max_tokens=%d", self.max_tokens)
            return Generation(text="", llm_called=True, error="truncated response (max_tokens reached)")
        text = (content or "").strip()
        if text.upper().startswith("NOT_IN_CONTEXT"):
            text = ""
        return Generation(text=text, llm_called=True, confidence=logprob_confidence(choice))
