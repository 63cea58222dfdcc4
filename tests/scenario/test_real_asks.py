"""Questions as people really paste them, through the real pipeline over the bundled docs: a
5,000-character question with a stack trace, a question that is only code, a question in two
languages, one word, a pasted log with no question. Each gets an answer with its sources or a
refusal with its reason code and a reason in words, and every turn is recorded."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from bot.app import App
from core import reasons
from core.messages import ConversationKey, Incoming

TRACE = "\n".join(f'  File "/srv/app/worker.py", line {100 + i}, in handle\n    result = pipeline.run(msg)'
                  for i in range(64))
ASKS = {
    "stack trace": "groundbot crashed while ingesting, what am I missing?\nTraceback (most recent call last):\n"
                   + TRACE + "\nValueError: bad chunk",
    "only code": "```python\nfrom bot.app import build_app\napp = build_app(config)\napp.ingest([path])\n```",
    "two languages": "How do I re-ingest documents? چطور اسناد را دوباره وارد کنم؟",
    "one word": "reingest",
    "a log": "2026-12-01 12:00:01 ERROR worker 3 died\n2026-12-01 12:00:02 INFO supervisor restarting worker 3",
    "persian on english": "چطور می‌توانم اسناد را دوباره وارد کنم؟",
    "quoting an answer": "> To re-ingest documents, run groundbot ingest again.\nYou said that above, but are deleted "
                         "files removed from the index too?",
    "a long log, the ask last": "\n".join(f"2026-12-01 12:00:{i % 60:02d} INFO worker {i % 4} took message {i}"
                                           for i in range(20)) + "\nHow do I re-ingest documents?",
    "a 20,000-character log, the ask last": "\n".join(
        f"2026-12-01 12:{i // 60 % 60:02d}:{i % 60:02d} INFO worker {i % 4} took message {i} from the queue"
        for i in range(330)) + "\nHow do I re-ingest documents?",
}


@pytest.mark.parametrize("kind", list(ASKS))
def test_a_pasted_ask_is_answered_or_refused_with_a_reason_and_recorded(make_app: Callable[..., App], kind: str) -> None:
    app = make_app()
    d = app.ask(Incoming(ConversationKey("console", kind), "local", ASKS[kind]))
    if d.refused:
        assert d.refusal_reason and d.explanation.strip() and d.refusal_message.strip()
    else:
        assert d.sources and d.answer.strip()
    assert d.recorded == "database" and len(app.store.turns()) == 1
    assert not (d.refused and d.unprompted)  # a refusal is never posted where nobody asked
    if kind in ("stack trace", "a 20,000-character log, the ask last"):  # longer than a question may be
        assert len(ASKS[kind]) > 5000 and d.refusal_reason == reasons.INPUT_REJECTED
    if kind == "two languages":  # the English half asks what the docs answer
        assert not d.refused
