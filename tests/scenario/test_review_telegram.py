"""The review loop on Telegram, through the real python-telegram-bot Application and the Bot
API stand-in: a held draft, the card in the admin's private chat, the admin's button, and the
user's answer in the original chat or reply chain."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from bot.app import App
from tests.scenario.test_review_console import HOLD_AT, RISKY
from tests.scenario.test_telegram import ADMIN, GUEST, buttons, running, standin, tg_app  # noqa: F401
from tests.standins.telegram import Call, TelegramStandIn


def held_app(tg_app: Callable[..., App], base_config: Any) -> App:  # noqa: F811
    review = replace(base_config.core.review, template_risk=HOLD_AT, hold_risk=HOLD_AT)
    return tg_app(review=review)


async def held(app: App, standin: TelegramStandIn, chat_id: int = 501, text_prefix: str = "",  # noqa: F811
               text: str = RISKY, **kw: Any) -> tuple[Call, int]:
    """Ask the risky question; return the admin's card and the item id once the user was told."""
    before = len(standin.sent(chat_id))
    if text_prefix:  # a mention of the bot, as a group needs
        kw["entities"] = [{"type": "mention", "offset": 0, "length": len(text_prefix.strip())}]
    standin.send_text(text_prefix + text, chat_id=chat_id, user_id=777, **kw)
    told = (await standin.wait_sent(before + 1, chat_id=chat_id))[-1]
    assert told.params["text"].startswith("Your question has been passed to an admin for review.")
    assert not [b for b in buttons(told) if b[1].startswith("fr:")]  # nothing to flag: a person will look
    card = (await standin.wait_sent(1, chat_id=ADMIN))[-1]
    item = int(re.search(r"Held for review: #(\d+) \(telegram", card.params["text"]).group(1))  # type: ignore[union-attr]
    return card, item


async def test_admin_approves_from_the_card_and_the_user_gets_the_answer(tg_app: Callable[..., App],  # noqa: F811
                                                                          standin: TelegramStandIn,  # noqa: F811
                                                                          base_config: Any) -> None:
    app = held_app(tg_app, base_config)
    async with running(app):
        card, item = await held(app, standin)
        text = card.params["text"]
        assert f"Question (telegram, user 777): {RISKY}" in text and "Draft: " in text and "uncovered_claims" in text
        assert buttons(card) == [("Approve", f"r:approve:{item}"), ("Edit", f"r:edit:{item}"),
                                 ("Reject", f"r:reject:{item}"), ("Approve + FAQ", f"r:faq:{item}")]
        standin.press(card.result, f"r:approve:{item}", user_id=GUEST)  # not an admin: refused, nothing changes
        denied = await standin.wait_for(lambda: standin.of("answerCallbackQuery"))
        assert denied[0].params["text"] == "Sorry, only admins can use the review queue."
        assert len(standin.sent(501)) == 1 and app.desk.queue.entry(item).status == "open"  # type: ignore[union-attr]

        standin.press(card.result, f"r:approve:{item}", user_id=ADMIN)
        [_, answer] = await standin.wait_sent(2, chat_id=501)
        done = await standin.wait_for(lambda: [c for c in standin.sent(ADMIN) if "approved" in c.params["text"]])
    draft = app.store.turns()[-1].record["draft"]
    assert answer.params["text"].startswith(f"An admin reviewed your question “{RISKY}”:")
    body, _, listed = answer.params["text"].partition("\n\nSources:\n")
    assert draft.split("[C")[0].strip()[:40] in body
    cited = set(re.findall(r"\[(\d+)\]", body))  # every number the answer cites has its source line
    assert cited and cited == set(re.findall(r"^\[(\d+)\] ", listed, re.M))
    assert done[0].params["text"] == f"#{item} approved; the answer went to the user."
    assert app.desk.queue.entry(item).reviewer == f"telegram:{ADMIN}"  # type: ignore[union-attr]


async def test_edit_then_approve_answers_in_the_reply_chain(tg_app: Callable[..., App],  # noqa: F811
                                                             standin: TelegramStandIn, base_config: Any) -> None:  # noqa: F811
    app = held_app(tg_app, base_config)
    group = -1002
    async with running(app):
        # a colleague asked; a bare mention in reply to it asks their question
        human = standin.message_update(RISKY, chat_id=group, chat_type="supergroup", user_id=900)["message"]
        mention = f"@{standin.username}"
        card, item = await held(app, standin, chat_id=group, chat_type="supergroup", reply_to=human,
                                text_prefix=mention, text="")
        thread = app.store.turns()[-1].thread_id
        assert thread == f"r{human['message_id']}"  # the conversation hangs on the human's message
        standin.press(card.result, f"r:edit:{item}", user_id=ADMIN)
        prompt = await standin.wait_for(lambda: [c for c in standin.sent(ADMIN) if "corrected answer" in c.params["text"]])
        assert prompt[0].params["reply_markup"]["force_reply"] is True
        reply = standin.message_update("Telegram takes 4096 characters per message; longer answers are split.",
                                       chat_id=ADMIN, user_id=ADMIN, reply_to=prompt[0].result)
        standin.enqueue(reply)
        answer = (await standin.wait_sent(2, chat_id=group))[-1]
    assert "Telegram takes 4096 characters per message" in answer.params["text"]
    assert answer.params["reply_parameters"]["message_id"] == human["message_id"]  # the original thread
    assert app.desk.queue.entry(item).status == "edited"  # type: ignore[union-attr]


async def test_reject_sends_the_refusal_with_suggestions(tg_app: Callable[..., App],  # noqa: F811
                                                         standin: TelegramStandIn, base_config: Any) -> None:  # noqa: F811
    app = held_app(tg_app, base_config)
    async with running(app):
        card, item = await held(app, standin)
        standin.press(card.result, f"r:reject:{item}", user_id=ADMIN)
        [_, refusal] = await standin.wait_sent(2, chat_id=501)
    assert refusal.params["text"].startswith(app.config.core.refusal.messages["en"])
    assert "[REVIEW_REJECTED]" in refusal.params["text"]
    assert [b for b in buttons(refusal) if b[1].startswith("s:")]


async def test_approve_as_faq_then_the_question_is_answered_from_it(tg_app: Callable[..., App],  # noqa: F811
                                                                    standin: TelegramStandIn, base_config: Any) -> None:  # noqa: F811
    app = held_app(tg_app, base_config)
    async with running(app):
        card, item = await held(app, standin)
        standin.press(card.result, f"r:faq:{item}", user_id=ADMIN)
        await standin.wait_sent(2, chat_id=501)
        standin.send_text(RISKY, chat_id=501, user_id=777)
        again = (await standin.wait_sent(3, chat_id=501))[-1]
    assert "reviewed by telegram " + str(ADMIN) in again.params["text"]
    last = app.store.turns()[-1]
    assert last.state == "replied" and last.record["route"] == "reply"
    assert len(standin.sent(ADMIN)) == 2  # the card and the confirmation: no second card, nothing held
