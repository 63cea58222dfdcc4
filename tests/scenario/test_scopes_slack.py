"""Knowledge scopes through the real slack-bolt App and slack-sdk clients against the local
Slack stand-in (Socket Mode and HTTP): #hr is answered from HR's documents, #eng is refused the
same question though its text is in the index, suggestions offered in #hr are answered there,
a thread is read in its own channel's scope only, and an admin of one scope cannot re-ingest
another."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from adapters.slack import SlackAdapter
from bot.app import build_app
from bot.config import load_config
from bot.platforms import SlackThreads
from storage.records.reply_threads import ReplyThreads
from tests.scenario.scoped_kb import (
    ENG_ADMIN_SLACK,
    ENG_CHANNEL,
    HR_ADMIN_SLACK,
    HR_CHANNEL,
    HR_OFF,
    HR_QUESTION,
    HR_WORDS,
    scoped,
    write_kb,
)
from tests.scenario.test_slack import (
    BOT_TOKEN,
    SECRET,
    Slack,
    blocks_text,
    buttons,
    run_adapter,
    standin,
)
from tests.standins.slack import SlackStandIn

__all__ = ["standin"]  # the stand-in fixture of the Slack scenarios, reused
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def scoped_slack(standin: SlackStandIn, tmp_path: Path, embedder: Any,
                 monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[str], Slack]]:
    """scoped_slack(mode) -> a running Slack bot over the two teams' knowledge base."""
    stops: list[Callable[[], None]] = []

    def factory(mode: str) -> Slack:
        kb = write_kb(tmp_path)
        cfg = load_config(ROOT / "config.toml", environ={"GROUNDBOT_SLACK_BOT_TOKEN": BOT_TOKEN})
        app = build_app(scoped(cfg.changed(paths__data_dir=tmp_path / "data"), kb), embedder=embedder)
        app.ingest()
        adapter = SlackAdapter(app, bot_token=BOT_TOKEN, signing_secret=SECRET, api_base_url=standin.api_url,
                               progress_interval_s=0.0, threads=SlackThreads(ReplyThreads(app.store.engine)))
        return run_adapter(mode, standin, app, adapter, monkeypatch, stops)

    yield factory
    for stop in stops:
        stop()


@pytest.mark.parametrize("mode", ["socket", "http"])
def test_hr_channel_is_answered_from_hr_and_eng_is_refused_the_same_question(
        scoped_slack: Callable[[str], Slack], mode: str) -> None:
    bot = scoped_slack(mode)
    bot.mention(HR_QUESTION, ts="1801.000100", channel=HR_CHANNEL)
    (hr,) = bot.replies(1)
    assert hr.args["channel"] == HR_CHANNEL and HR_WORDS in blocks_text(hr)
    assert "Leave policy" in blocks_text(hr)  # the source cited
    bot.mention(HR_QUESTION, ts="1801.000200", channel=ENG_CHANNEL)
    _, eng = bot.replies(2)
    assert eng.args["channel"] == ENG_CHANNEL and HR_WORDS not in blocks_text(eng)
    assert blocks_text(eng).startswith("The engineering runbooks do not answer this")
    assert not any("leave" in b["text"]["text"].lower() for b in buttons(eng))
    hr_turn, eng_turn = bot.app.store.turns()
    assert (hr_turn.scope, hr_turn.refused, eng_turn.scope, eng_turn.refused) == ("hr", False, "eng", True)


@pytest.mark.parametrize("mode", ["socket", "http"])
def test_a_thread_is_read_in_its_own_channels_scope_only(scoped_slack: Callable[[str], Slack], mode: str) -> None:
    """A Slack thread never leaves its channel; a message in another channel that names the same
    thread (ts) is not a follow-up of it, and a question asked there is read in that channel's
    scope alone, with none of the first channel's turns."""
    bot = scoped_slack(mode)
    thread = "1804.000100"
    bot.mention(HR_QUESTION, ts=thread, channel=HR_CHANNEL)
    bot.replies(1)
    bot.settle()
    bot.say("Can it be split into blocks?", ts="1804.000200", thread_ts=thread, channel=ENG_CHANNEL)
    bot.settle()
    assert len(bot.api.requests("chat.postMessage")) == 1 and len(bot.app.store.turns()) == 1
    bot.mention("Can it be split into blocks?", ts="1804.000300", thread_ts=thread, channel=ENG_CHANNEL)
    _, eng = bot.replies(2)
    assert (eng.args["channel"], eng.args["thread_ts"]) == (ENG_CHANNEL, thread) and "blocks" not in blocks_text(eng)
    bot.say("Can it be split into blocks?", ts="1804.000400", thread_ts=thread, channel=HR_CHANNEL)  # in #hr
    *_, hr = bot.replies(3)
    assert (hr.args["channel"], hr.args["thread_ts"]) == (HR_CHANNEL, thread)
    first, in_eng, in_hr = bot.app.store.turns()
    assert (in_eng.scope, in_eng.refused, in_eng.record["history"]) == ("eng", True, "none")
    assert in_eng.conversation_id != first.conversation_id and HR_WORDS not in blocks_text(eng)
    assert (in_hr.scope, in_hr.record["history"]) == ("hr", "loaded")  # the #hr thread's follow-up, in hr
    assert in_hr.conversation_id == first.conversation_id


def test_suggestions_offered_in_hr_are_answered_in_hr(scoped_slack: Callable[[str], Slack]) -> None:
    bot = scoped_slack("http")
    bot.app.check_suggestions()
    hr_texts = set(bot.app.index.suggestion_texts(100, scope="hr"))
    bot.mention(HR_OFF, ts="1802.000100", channel=HR_CHANNEL)
    (refusal,) = bot.replies(1)
    offered = [b for b in buttons(refusal) if b["action_id"].startswith("groundbot_suggest_")]
    assert offered and {b["text"]["text"] for b in offered} <= hr_texts
    bot.click(refusal, offered[0]["action_id"], user="UBOB0001")
    _, answer = bot.replies(2)
    assert answer.args["channel"] == HR_CHANNEL and "*Sources*" in blocks_text(answer)
    picked = bot.app.store.turns()[-1]
    assert (picked.question, picked.scope, picked.refused) == (offered[0]["text"]["text"], "hr", False)


def test_an_admin_of_one_scope_cannot_reingest_another(scoped_slack: Callable[[str], Slack], tmp_path: Path) -> None:
    bot = scoped_slack("http")
    (tmp_path / "kb" / "eng" / "oncall.md").write_text(
        "# On call\n\n## Who is on call at night?\n\nThe on-call engineer of the week answers pages at night.\n")
    version = bot.app.index.version()
    for command in ("/groundbot-reingest", "/groundbot-stats"):
        ack = bot.command(command, user=HR_ADMIN_SLACK, channel=ENG_CHANNEL)
        assert ack["text"].startswith("Sorry, only admins can"), ack
    assert "knowledge of scope eng" in bot.command("/groundbot-reingest", user=HR_ADMIN_SLACK,
                                                   channel=ENG_CHANNEL)["text"]
    bot.settle()
    assert bot.app.index.version() == version
    ack = bot.command("/groundbot-reingest", user=ENG_ADMIN_SLACK, channel=ENG_CHANNEL)
    assert "Re-ingesting" in ack["text"]
    bot.api.wait_until(lambda: any("Re-ingest of scope eng" in c.args.get("text", "")
                                   for c in bot.api.requests("chat.update")), what="the scoped re-ingest summary")
    assert "added 1" in bot.api.requests("chat.update")[-1].args["text"]
    assert bot.app.index.version() != version


def test_a_question_flagged_in_hr_is_sent_to_hrs_admins_not_engineerings(scoped_slack: Callable[[str], Slack]) -> None:
    """A review item asked in a scope reaches that scope's own admins in their direct messages
    with the app; another scope's admins are not told."""
    bot = scoped_slack("http")
    bot.mention(HR_OFF, ts="1803.000100", channel=HR_CHANNEL)
    (refusal,) = bot.replies(1)
    bot.click(refusal, "groundbot_reason_should_answer", user="UBOB0001")
    card = bot.replies(2)[-1]
    assert card.args["channel"] == HR_ADMIN_SLACK and "A user flagged #" in blocks_text(card)
    assert "Scope: hr" in blocks_text(card)
    posted = {c.args["channel"] for c in bot.api.requests("chat.postMessage")}
    assert ENG_ADMIN_SLACK not in posted
    [entry] = bot.app.desk.queue.entries()
    assert entry.record["scope"] == "hr"
