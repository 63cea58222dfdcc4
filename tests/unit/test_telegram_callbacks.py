"""The one codec between what a Telegram button carries and its callback data
(adapters/telegram/callbacks.py): every press written the way earlier versions wrote it, so buttons
posted long ago still work after a restart and on any worker; anything else is not a press."""

from __future__ import annotations

import pytest

from adapters.telegram.callbacks import (
    CALLBACK_LIMIT,
    Escalate,
    Kind,
    Pick,
    Press,
    Reason,
    Review,
    Vote,
    decode,
    encode,
    kind_of,
    of_kind,
)
from adapters.telegram.rendering import button_press
from core.admin_replies import ESCALATE, Action, Button, FeedbackReason

# callback data as earlier versions posted it under answers, refusals and queue cards
POSTED: list[tuple[str, Press]] = [
    ("f:12:1", Vote(12, 1)),
    ("f:12:-1", Vote(12, -1)),
    ("s:7", Pick(7)),
    ("e:12", Escalate(12)),
    ("fr:12:should_answer", Reason(12, FeedbackReason.SHOULD_ANSWER)),
    ("fr:12:wrong", Reason(12, FeedbackReason.WRONG)),
    ("r:approve:3", Review(Action.APPROVE, 3)),
    ("r:faq:3", Review(Action.FAQ, 3)),
]


@pytest.mark.parametrize(("data", "press"), POSTED)
def test_buttons_posted_before_read_as_they_were_written(data: str, press: Press) -> None:
    read = decode(data)
    assert type(read) is type(press) and read == press
    assert encode(press) == data


@pytest.mark.parametrize("data", ["s:not-an-id", "f:1", "e:", "fr:12:because", "r:delete:3", "r:3:approve",
                                  "x:1", "", "f:12:1:9"])
def test_data_of_another_shape_is_no_press(data: str) -> None:
    assert decode(data) is None


def test_a_handler_takes_every_press_of_its_kind_even_a_malformed_one() -> None:
    """So it can tell the presser the button no longer works; the other kinds are not its own."""
    assert of_kind(Kind.SUGGESTION)("s:not-an-id") and not of_kind(Kind.SUGGESTION)("f:1:1")
    assert of_kind(Kind.REASON)("fr:1:wrong") and not of_kind(Kind.VOTE)("fr:1:wrong")
    assert kind_of(None) is None and kind_of("fx:1") is None


def test_command_buttons_carry_their_typed_action() -> None:
    assert encode(button_press(Button("Approve", Action.APPROVE, 3))) == "r:approve:3"
    assert encode(button_press(Button("Wrong", FeedbackReason.WRONG, 12))) == "fr:12:wrong"
    assert encode(button_press(Button("Ask a person", ESCALATE, 12))) == "e:12"


def test_callback_data_stays_within_telegrams_limit() -> None:
    assert len(encode(Reason(10**18, FeedbackReason.SHOULD_ANSWER)).encode()) <= CALLBACK_LIMIT
    with pytest.raises(ValueError, match="64 bytes"):
        encode(Pick(10**70))
