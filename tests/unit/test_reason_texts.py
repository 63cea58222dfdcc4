"""Every reason code has its explanation in every catalogue, and what a refusal shows the asker is
in the asker's language, the numbers and internals kept for `/why`."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from adapters.slack.rendering import failure_message
from adapters.telegram.rendering import failure_text
from core.catalogue import catalogue, explain, languages, say
from core.messages import ConversationKey, Incoming
from core.ports import Models
from core.reasons import Reason
from core.render import refusal_in, render_text
from core.settings import CoreSettings, RefusalSettings
from core.turn.pipeline import Pipeline
from tests.unit.fakes import BagOfWordsEmbedder, ListIndex, MemoryStore, QueueGenerator

LATIN = re.compile(r"[A-Za-z]{2,}")
REASON_CODES_PAGE = Path(__file__).resolve().parents[2] / "docs" / "reason-codes.md"


@pytest.mark.parametrize("reason", list(Reason))
@pytest.mark.parametrize("lang", ["en", "fa"])
def test_every_reason_code_is_explained_in_every_language(reason: Reason, lang: str) -> None:
    own = catalogue(lang).get(f"reason_{reason.lower()}")  # its own text, not the English fallback
    assert own and explain(reason, lang) == own
    if lang == "fa":
        assert not LATIN.search(own), own


def test_every_reason_code_is_documented_and_every_documented_code_exists() -> None:
    """docs/reason-codes.md is where users and dashboards look a code up: one entry per code."""
    page = REASON_CODES_PAGE.read_text(encoding="utf-8")
    meanings = page.split("## What do the reason codes mean?", 1)[1].split("\n## ", 1)[0]
    documented = re.findall(r"^- `([A-Z_]+)`:", meanings, re.M)
    assert sorted(documented) == sorted(Reason), set(documented) ^ set(Reason)


def test_the_default_refusal_is_written_once_in_the_catalogue() -> None:
    assert RefusalSettings().messages == {lang: say("refusal", lang) for lang in languages()}
    assert refusal_in("fa") == say("refusal", "fa") and refusal_in("fa", {"fa": "نه."}) == "نه."
    assert refusal_in("en", {"fa": "نه."}) == say("refusal", "en")


def test_a_failure_while_answering_is_told_in_the_asker_s_language() -> None:
    text = failure_text({}, "fa")
    assert text.startswith(say("refusal", "fa")) and explain(Reason.INTERNAL_ERROR, "fa") in text
    assert not LATIN.search(text.replace(f"[{Reason.INTERNAL_ERROR}]", "")), text
    slack = failure_message(refusal_in("fa"), "fa")
    shown = slack.text + " ".join(e["text"] for b in slack.blocks if b["type"] == "context" for e in b["elements"])
    assert f"`{Reason.INTERNAL_ERROR}`" in shown and not LATIN.search(shown.replace(f"`{Reason.INTERNAL_ERROR}`", "")), shown


def test_a_refused_persian_question_reads_persian_and_keeps_the_numbers_for_why() -> None:
    emb = BagOfWordsEmbedder()
    p = Pipeline(CoreSettings(), Models(emb, QueueGenerator()), ListIndex(["The webhook listens on port 8443."], emb),
                 MemoryStore())
    d = p.handle(Incoming(ConversationKey("t", "fa"), "u", "پورت وب‌هوک تلگرام چند است؟"))
    assert d.refused and d.language == "fa"
    assert d.explanation == explain(d.refusal_reason, "fa")
    shown = render_text(d).replace(f"[{d.refusal_reason}]", "")
    assert not LATIN.search(shown), shown
