"""Knowledge scopes through the real python-telegram-bot Application against the local Bot API
stand-in: the HR group is answered from HR's documents, the engineering group is refused the
same question though its text is in the index, suggestions offered in a scope are answered in
it, and an admin of one scope cannot re-ingest another."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from bot.app import App, build_app
from bot.config import load_config
from bot.settings import TelegramSettings
from tests.scenario.scoped_kb import (
    ENG_ADMIN_TG,
    ENG_GROUP,
    HR_ADMIN_TG,
    HR_GROUP,
    HR_OFF,
    HR_QUESTION,
    HR_WORDS,
    scoped,
    write_kb,
)
from tests.scenario.test_telegram import SECRET, SECRET_ENV, TOKEN_ENV, buttons, running, standin
from tests.standins.telegram import TelegramStandIn

__all__ = ["standin"]  # the stand-in fixture of the Telegram scenarios, reused
ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.filterwarnings("ignore:.*retry_after.*:telegram.warnings.PTBDeprecationWarning")


@pytest.fixture
def scoped_tg(tmp_path: Path, embedder: Any, standin: TelegramStandIn) -> Callable[[], App]:
    """A real App over the two teams' knowledge base, its bot pointed at the stand-in."""

    def factory() -> App:
        kb = write_kb(tmp_path)
        cfg = load_config(ROOT / "config.toml", environ={TOKEN_ENV: standin.token, SECRET_ENV: SECRET})
        telegram = replace(TelegramSettings(), base_url=standin.base_url)
        cfg = scoped(cfg.changed(paths__data_dir=tmp_path / "data", telegram=telegram), kb)
        app = build_app(cfg, embedder=embedder)
        app.ingest()
        return app

    return factory


async def test_hr_group_is_answered_from_hr_and_engineering_is_refused_the_same_question(
        scoped_tg: Callable[[], App], standin: TelegramStandIn) -> None:
    app = scoped_tg()
    async with running(app):
        standin.send_text(f"/ask {HR_QUESTION}", chat_id=HR_GROUP, chat_type="group", user_id=901)
        [hr] = await standin.wait_sent(1, chat_id=HR_GROUP)
        assert HR_WORDS in hr.params["text"] and "leave" in hr.params["text"].split("Sources:")[1].lower()
        standin.send_text(f"/ask {HR_QUESTION}", chat_id=ENG_GROUP, chat_type="group", user_id=902)
        [eng] = await standin.wait_sent(1, chat_id=ENG_GROUP)
        assert eng.params["text"].startswith("The engineering runbooks do not answer this")
        assert HR_WORDS not in eng.params["text"] and "Sources:" not in eng.params["text"]
        assert not any("leave" in label.lower() for label, _ in buttons(eng))
    turns = {t.chat_id: t for t in app.store.turns()}
    assert (turns[str(HR_GROUP)].scope, turns[str(HR_GROUP)].refused) == ("hr", False)
    assert (turns[str(ENG_GROUP)].scope, turns[str(ENG_GROUP)].refused) == ("eng", True)
    assert turns[str(ENG_GROUP)].record["scope"] == "eng"


async def test_suggestions_offered_in_the_hr_group_are_answered_there(scoped_tg: Callable[[], App],
                                                                      standin: TelegramStandIn) -> None:
    app = scoped_tg()
    app.check_suggestions()
    hr_only = set(app.index.suggestion_texts(100, scope="hr")) - set(app.index.suggestion_texts(100, scope="eng"))
    async with running(app):
        standin.send_text(f"/ask {HR_OFF}", chat_id=HR_GROUP, chat_type="group", user_id=901)
        [refusal] = await standin.wait_sent(1, chat_id=HR_GROUP)
        offered = [(label, data) for label, data in buttons(refusal) if data.startswith("s:")]
        assert offered and {label for label, _ in offered} <= set(app.index.suggestion_texts(100, scope="hr"))
        assert {label for label, _ in offered} & hr_only
        standin.press(refusal.result, offered[0][1], user_id=901)
        _, answer = await standin.wait_sent(2, chat_id=HR_GROUP)
        assert answer.params["text"].startswith(f"› {offered[0][0]}") and "Sources:" in answer.params["text"]
    picked = app.store.turns()[-1]
    assert (picked.question, picked.scope, picked.refused) == (offered[0][0], "hr", False)


async def test_an_admin_of_one_scope_cannot_reingest_another(scoped_tg: Callable[[], App], standin: TelegramStandIn,
                                                             tmp_path: Path) -> None:
    app = scoped_tg()
    (tmp_path / "kb" / "hr" / "benefits.md").write_text(
        "# Benefits\n\n## Is there a gym allowance?\n\nEvery employee gets a gym allowance of forty euros a month.\n")
    (tmp_path / "kb" / "eng" / "oncall.md").write_text(
        "# On call\n\n## Who is on call at night?\n\nThe on-call engineer of the week answers pages at night.\n")
    docs = set(app.index.existing_docs())
    async with running(app):
        standin.send_text("/reingest", chat_id=ENG_GROUP, chat_type="group", user_id=HR_ADMIN_TG)
        [denied] = await standin.wait_sent(1, chat_id=ENG_GROUP)
        assert denied.params["text"] == "Sorry, only admins can re-ingest the knowledge of scope eng."
        assert set(app.index.existing_docs()) == docs and not standin.of("editMessageText")

        standin.send_text("/reingest", chat_id=HR_GROUP, chat_type="group", user_id=HR_ADMIN_TG)
        edits = await standin.wait_for(lambda: [e for e in standin.of("editMessageText")
                                                if e.params["text"].startswith("Re-ingest of scope hr")])
        assert "added 1, updated 0, removed 0, unchanged 2 documents" in edits[-1].params["text"]
        standin.send_text("/reingest", chat_id=HR_GROUP, chat_type="group", user_id=ENG_ADMIN_TG)
        await standin.wait_sent(2, chat_id=HR_GROUP)
        assert standin.sent(HR_GROUP)[-1].params["text"] == "Sorry, only admins can re-ingest the knowledge of scope hr."
    added = set(app.index.existing_docs()) - docs
    assert [d.split("/")[-1] for d in added] == ["benefits.md"]  # engineering's new file waits for its own admins
    assert app.store.turns() == []
    shutil.rmtree(tmp_path / "data", ignore_errors=True)


async def test_a_question_flagged_in_the_hr_group_is_sent_to_hrs_admins_not_engineerings(
        scoped_tg: Callable[[], App], standin: TelegramStandIn) -> None:
    """A review item asked in a scope reaches that scope's own admins in their private chats (a
    Telegram user's private chat id is their user id); another scope's admins are not told."""
    app = scoped_tg()
    async with running(app):
        standin.send_text(f"/ask {HR_OFF}", chat_id=HR_GROUP, chat_type="group", user_id=901)
        [refusal] = await standin.wait_sent(1, chat_id=HR_GROUP)
        flag = next(data for _, data in buttons(refusal) if data.startswith("fr:"))
        standin.press(refusal.result, flag, user_id=901)
        [card] = await standin.wait_sent(1, chat_id=HR_ADMIN_TG)
        assert "A user flagged #" in card.params["text"] and "Scope: hr" in card.params["text"]
        assert [data for _, data in buttons(card)][0].startswith("r:approve:")
    assert standin.sent(ENG_ADMIN_TG) == []
    [entry] = app.desk.queue.entries()
    assert entry.record["scope"] == "hr"
