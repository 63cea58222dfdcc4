"""The review loop on the console, over the real App: a held draft, the admin's decision, the
user's answer in the original conversation; feedback with a reason joins the queue."""

from __future__ import annotations

import io
import re
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from adapters.console import ConsoleChat

# an answer whose risk (0.26 with the shipped models and docs; its parts in the record) a review
# threshold of HOLD_AT holds, while the same question answered from an approved FAQ entry is below it
RISKY = "How does an admin approve or reject held answers?"
HOLD_AT = 0.2


def held_app(make_app: Callable[..., Any], base_config: Any, hold: float = HOLD_AT) -> Any:
    review = replace(base_config.core.review, template_risk=hold, hold_risk=hold)
    return make_app(config=base_config.changed(review=review))


class Console:
    def __init__(self, app: Any, user: str, session: str) -> None:
        self.out = io.StringIO()
        self.chat = ConsoleChat(app, user_id=user, stdin=io.StringIO(""), stdout=self.out, session=session)
        self.chat.connect()  # as `run` does: this chat takes the console's reviewed answers

    def __call__(self, line: str) -> str:
        start = len(self.out.getvalue())
        self.chat.handle_line(line)
        return self.out.getvalue()[start:]


def _held(app: Any) -> tuple[Console, Console, int]:
    admin = Console(app, "local", "admin")
    user = Console(app, "guest", "chat-7")  # registered last: reviewed answers for console print here
    told = user(RISKY)
    assert "passed to an admin for review" in told
    item = int(re.search(r"#(\d+) \[held\]", admin("/review")).group(1))  # type: ignore[union-attr]
    return admin, user, item


def test_held_draft_shown_and_approved_reaches_the_user(make_app: Callable[..., Any], base_config: Any) -> None:
    app = held_app(make_app, base_config)
    admin, user, item = _held(app)
    turn = app.store.turns()[-1]
    assert turn.state == "pending_review" and turn.record["route"] == "hold" and turn.record["risk"] >= HOLD_AT
    shown = admin(f"/review show {item}")
    assert f"Question (console, user guest): {RISKY}" in shown and "Draft: " in shown
    assert "Risk " in shown and "uncovered_claims" in shown and "Claims:" in shown and "Sources:" in shown
    assert "[Approve: /review approve" in shown
    before = len(user.out.getvalue())
    assert f"#{item} approved" in admin(f"/review approve {item}")
    delivered = user.out.getvalue()[before:]
    assert "[chat-7] An admin reviewed your question" in delivered and turn.record["draft"][:40] in delivered.replace("[1]", "[C1]")
    assert "was already decided (approved, by console:local)" in admin(f"/review approve {item}")
    assert "The review queue is empty." in admin("/review")


def test_edit_then_approve_and_reject(make_app: Callable[..., Any], base_config: Any) -> None:
    app = held_app(make_app, base_config)
    admin, user, item = _held(app)
    assert "Reply with the corrected answer" in admin(f"/review edit {item}")
    before = len(user.out.getvalue())
    assert f"#{item} edited and approved" in admin(f"/review edit {item} Messages are split at 4096 characters.")
    assert "Messages are split at 4096 characters." in user.out.getvalue()[before:]
    user("Can I use PostgreSQL for transcripts?")  # answered or refused, it does not matter here
    user(RISKY)
    second = int(re.findall(r"#(\d+) \[held\]", admin("/review"))[-1])
    before = len(user.out.getvalue())
    assert f"#{second} rejected" in admin(f"/review reject {second}")
    rejected = user.out.getvalue()[before:]
    assert "I can't answer that from the knowledge base I have." in rejected and "REVIEW_REJECTED" in rejected
    assert "You could ask:" in rejected
    statuses = [e.status for e in app.desk.queue.entries(status="") if e.question == RISKY]  # the other may be held too
    assert statuses == ["edited", "rejected"]


def test_approve_as_faq_then_the_same_question_is_answered_from_it(make_app: Callable[..., Any],
                                                                   base_config: Any) -> None:
    app = held_app(make_app, base_config)
    admin, user, item = _held(app)
    answer = "A Telegram message holds at most 4096 characters; longer answers are split."
    saved = admin(f"/review faq {item} {answer}")
    assert f"#{item} approved and saved as an FAQ entry (added 1" in saved
    again = user(RISKY)
    assert answer in again and "reviewed by console local" in again and "admin for review" not in again
    last = app.store.turns()[-1]
    assert last.state == "replied" and last.record["route"] == "reply" and not app.desk.queue.entries()


def test_non_admin_is_refused_and_nothing_changes(make_app: Callable[..., Any], base_config: Any) -> None:
    app = held_app(make_app, base_config)
    _, user, item = _held(app)
    for line in ("/review", f"/review approve {item}", f"/review faq {item} x", "/stats", "/reingest"):
        assert "Sorry, only admins can" in user(line)
    assert [e.status for e in app.desk.queue.entries(status="")] == ["open"]


def test_thumbs_down_with_a_reason_and_a_should_answer_refusal_land_in_the_queue(make_app: Callable[..., Any]) -> None:
    app = make_app()
    user, admin = Console(app, "guest", "c1"), Console(app, "local", "admin")
    user("How do I re-ingest documents?")
    asked = user("/bad")
    assert "What was wrong?" in asked and "[Wrong answer: /bad wrong]" in asked
    assert "an admin will look at it" in user("/bad wrong it skips PDFs")
    user("What is the capital of France?")
    assert "an admin will look at it" in user("/bad should_answer")
    listing = admin("/review")
    assert "[feedback: wrong] How do I re-ingest documents?" in listing
    assert "[feedback: should_answer] What is the capital of France?" in listing
    first = re.findall(r"#(\d+)", listing)[0]
    shown = admin(f"/review show {first}")
    assert "User's comment: it skips PDFs" in shown
    assert app.stats()["review_queue"] == 2
