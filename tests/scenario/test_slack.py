"""The Slack adapter end to end: the real slack-bolt App and slack-sdk clients against a
local stand-in of the Slack Web API and Socket Mode websocket, over a real groundbot App.

Each scenario runs over Socket Mode (envelopes over the local websocket) and over HTTP
(signed requests POSTed to the running Events API endpoint). Assertions are on what the
stand-in received (channel, thread_ts, blocks, button values) and on the transcript store.
"""

from __future__ import annotations

import hashlib
import hmac
import itertools
import json
import shutil
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from concurrent.futures import Executor, Future
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
import yaml
from slack_sdk import WebClient

from adapters.slack import SlackAdapter, SlackHTTPServer, question_text
from adapters.slack.dedupe import OnceKeys
from adapters.slack.rendering import (
    FEEDBACK_DOWN,
    FEEDBACK_UP,
    MAX_BLOCKS,
    SECTION_TEXT_LIMIT,
    chunk_blocks,
    fit,
    render_decision,
    section,
    source_line,
)
from adapters.slack.thread_answers import ANSWER_EVENT, answer_metadata
from bot.app import App, build_app
from bot.cli.main import main as cli_main
from bot.config import load_config
from bot.platforms import SlackThreads, build_adapter, slack_secrets
from bot.server.metrics import Metrics
from bot.server.shared import SharedOnce
from core import reasons
from core.messages import Decision, Generation, Platform, Source, Suggestion, message_uid
from core.settings import Mode
from storage.records.deliveries import Deliveries
from storage.records.reply_threads import ReplyThreads
from tests.standins.slack import BOT_USER, TEAM, Call, SlackStandIn
from tests.waits import WAIT_S

ROOT = Path(__file__).resolve().parents[2]
BOT_TOKEN = "xoxb-standin-bot"
APP_TOKEN = "xapp-standin-app"
SECRET = "standin-signing-secret"
ADMIN = "UADMIN01"
USER = "UALICE01"
CHANNEL = "C0GENERAL"
MODES = ["socket", "http"]
# refused (the handbook says nothing of permits), with "How do I renew a book?" suggested
PARKING = "Can I renew my parking permit?"

RULES = " ".join(
    f"Rule {i}: members must return item number {i} to shelf {i} of the quiet reading room before closing time."
    for i in range(1, 90)
)
HANDBOOK = """# Riverside Library handbook

## How do I renew a book?

You can renew a book online or at the front desk. Each renewal adds 14 days to the loan, and a book can be renewed at most three times unless another member has reserved it.

## What are the opening hours?

The library opens at 9 in the morning and closes at 8 in the evening from Monday to Friday. On Saturdays it closes at 5 in the afternoon, and it is closed on Sundays.

## How do I get a library card?

Bring a photo ID and a proof of address to the front desk. The card is free for residents and is printed while you wait.

## Can I return books after closing time?

Yes. The return box next to the main entrance is emptied every morning, and books returned there count as returned the previous day.
"""
FAQ = {"faq": [
    {"question": "What are the complete reading room rules?", "answer": RULES, "url": "https://library.example/rules"},
    {"question": "Can I bring food into the library?",
     "answer": "Drinks in closed bottles are allowed, but food must stay in the cafe on the ground floor.",
     "url": "https://library.example/food"},
]}


# -- fixtures -------------------------------------------------------------------------
@pytest.fixture(scope="module")
def kb_index(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> Path:
    """A small library knowledge base, indexed once per module and copied per test."""
    root = tmp_path_factory.mktemp("slack-kb")
    kb = root / "kb"
    kb.mkdir()
    (kb / "handbook.md").write_text(HANDBOOK, encoding="utf-8")
    (kb / "faq.yaml").write_text(yaml.safe_dump(FAQ, sort_keys=False, width=100_000), encoding="utf-8")
    cfg = load_config(ROOT / "config.toml", environ={}).changed(paths__data_dir=root / "data")
    assert build_app(cfg, embedder=embedder).ingest([kb]).chunks_written > 0
    return root / "data" / "index"


@pytest.fixture
def standin(monkeypatch: pytest.MonkeyPatch) -> Iterator[SlackStandIn]:
    for name in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy"):
        monkeypatch.delenv(name, raising=False)
    with SlackStandIn() as server:
        yield server


def sign(body: str, *, secret: str = SECRET, timestamp: int | None = None) -> dict[str, str]:
    ts = str(int(time.time()) if timestamp is None else timestamp)
    digest = hmac.new(secret.encode(), f"v0:{ts}:{body}".encode(), hashlib.sha256).hexdigest()
    return {"X-Slack-Request-Timestamp": ts, "X-Slack-Signature": f"v0={digest}"}


class InFlight:
    """Counts the listener runs of one adapter, so a test can wait until it has finished handling.

    bolt hands every listener to the adapter's executor before it acks (the Socket Mode ack and
    the HTTP response both come after that hand-off), so once a test has its ack, `idle()`
    covers the work that request started.
    """

    def __init__(self, monkeypatch: pytest.MonkeyPatch, executor: Executor) -> None:
        self._cond = threading.Condition()
        self._running = 0
        submit = executor.submit

        def counted(fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
            with self._cond:
                self._running += 1
            try:
                future = submit(fn, *args, **kwargs)
            except BaseException:
                self._done()
                raise
            future.add_done_callback(lambda _: self._done())
            return future

        monkeypatch.setattr(executor, "submit", counted)

    def _done(self) -> None:
        with self._cond:
            self._running -= 1
            self._cond.notify_all()

    def idle(self, timeout: float = WAIT_S) -> None:
        """Block until no listener of the adapter is running or queued."""
        with self._cond:
            assert self._cond.wait_for(lambda: self._running == 0, timeout), f"{self._running} listener(s) still running"


@dataclass
class Slack:
    """One running bot: groundbot App + adapter, reached over Socket Mode or HTTP."""

    mode: str
    api: SlackStandIn
    app: App
    adapter: SlackAdapter
    http: SlackHTTPServer | None
    inflight: InFlight | None = None
    _ids: Any = None

    def __post_init__(self) -> None:
        self._ids = itertools.count(1)

    # -- transport ------------------------------------------------------------------
    def post(self, body: str, content_type: str, headers: dict[str, str] | None = None) -> tuple[int, str, float]:
        """POST to the Events API endpoint; returns status, body, seconds until the response."""
        assert self.http is not None
        req = urllib.request.Request(f"http://127.0.0.1:{self.http.port}/slack/events", data=body.encode(),
                                     method="POST", headers={"Content-Type": content_type, **(headers or {})})
        t0 = time.monotonic()
        try:
            with urllib.request.urlopen(req, timeout=WAIT_S) as resp:
                return resp.status, resp.read().decode(), time.monotonic() - t0
        except urllib.error.HTTPError as err:
            return err.code, err.read().decode(), time.monotonic() - t0

    def deliver(self, kind: str, payload: dict[str, Any], *, retry: int = 0) -> tuple[dict[str, Any], float]:
        """Send one Slack request the way Slack would in this mode; returns (ack body, ack seconds)."""
        if self.mode == "socket":
            t0 = time.monotonic()
            ack = self.api.wait_ack(self.api.send_envelope(kind, payload, retry_attempt=retry))
            return ack.get("payload") or {}, time.monotonic() - t0
        if kind == "events_api":
            body, ctype = json.dumps(payload), "application/json"
        elif kind == "slash_commands":
            body, ctype = urlencode(payload), "application/x-www-form-urlencoded"
        else:
            body, ctype = urlencode({"payload": json.dumps(payload)}), "application/x-www-form-urlencoded"
        extra = {"X-Slack-Retry-Num": str(retry), "X-Slack-Retry-Reason": "http_timeout"} if retry else {}
        status, text, seconds = self.post(body, ctype, {**sign(body), **extra})
        assert status == 200, (status, text)
        # a plain-text ack body is shown by Slack as an ephemeral message, like {"text": ...}
        ack = json.loads(text) if text.strip().startswith("{") else ({"text": text} if text else {})
        return ack, seconds

    # -- what users do ----------------------------------------------------------------
    def event(self, event: dict[str, Any], *, event_id: str = "", retry: int = 0) -> tuple[dict[str, Any], float]:
        body = {"token": "legacy", "team_id": TEAM, "api_app_id": "A0GROUND", "type": "event_callback",
                "event_id": event_id or f"Ev{next(self._ids):08d}", "event_time": int(time.time()), "event": event,
                "authorizations": [{"team_id": TEAM, "user_id": BOT_USER, "is_bot": True}]}
        return self.deliver("events_api", body, retry=retry)

    def mention(self, text: str, *, ts: str, thread_ts: str = "", user: str = USER, channel: str = CHANNEL,
                **kw: Any) -> tuple[dict[str, Any], float]:
        event = {"type": "app_mention", "user": user, "text": f"<@{BOT_USER}> {text}", "ts": ts, "channel": channel,
                 "team": TEAM, "event_ts": ts, **({"thread_ts": thread_ts} if thread_ts else {})}
        return self.event(event, **kw)

    def say(self, text: str, *, ts: str, thread_ts: str = "", user: str = USER, channel: str = CHANNEL,
            channel_type: str = "channel", **fields: Any) -> tuple[dict[str, Any], float]:
        """A person's message in a channel, as `message.channels` (`message.groups` for a private
        channel) delivers it: in the thread `thread_ts` when given, `fields` added (subtype ...)."""
        event = {"type": "message", "channel": channel, "channel_type": channel_type, "user": user, "text": text,
                 "ts": ts, "event_ts": ts, "team": TEAM, **({"thread_ts": thread_ts} if thread_ts else {}), **fields}
        return self.event(event)

    def command(self, command: str, text: str = "", *, user: str = ADMIN, channel: str = CHANNEL) -> dict[str, Any]:
        payload = {"token": "legacy", "team_id": TEAM, "team_domain": "standin", "channel_id": channel,
                   "channel_name": "general", "user_id": user, "user_name": user.lower(), "command": command,
                   "text": text, "api_app_id": "A0GROUND", "is_enterprise_install": "false",
                   "response_url": self.api.response_url(f"cmd{next(self._ids)}"), "trigger_id": "13345224609.1"}
        return self.deliver("slash_commands", payload)[0]

    def click(self, posted: Call, action_id: str, *, user: str = USER) -> dict[str, Any]:
        """Press a button of a message the bot posted, with the values the bot put there;
        FEEDBACK_UP or FEEDBACK_DOWN press the thumbs of Slack's feedback element under an answer."""
        if action_id in (FEEDBACK_UP, FEEDBACK_DOWN):
            block, element = next((b, e) for b in posted.args["blocks"] if b["type"] == "context_actions"
                                  for e in b["elements"] if e["type"] == "feedback_buttons")
            chosen = element["positive_button" if action_id == FEEDBACK_UP else "negative_button"]
            return self.press(posted, block, {"type": "feedback_buttons", "action_id": element["action_id"],
                                              "block_id": block["block_id"], "value": chosen["value"],
                                              "text": chosen["text"]}, user)
        block, button = next((b, e) for b in posted.args["blocks"] if b["type"] == "actions"
                             for e in b["elements"] if e["action_id"] == action_id)
        return self.press(posted, block, {"type": "button", "action_id": action_id,
                                          "block_id": block.get("block_id", "b"), "text": button["text"],
                                          "value": button["value"]}, user)

    def press(self, posted: Call, block: dict[str, Any], action: dict[str, Any], user: str) -> dict[str, Any]:
        """The block_actions payload Slack sends when `user` acts on `block` of a posted message."""
        ts, channel, thread = posted.result["ts"], posted.args["channel"], posted.args.get("thread_ts")
        payload = {
            "type": "block_actions", "token": "legacy", "api_app_id": "A0GROUND", "trigger_id": "1.2.3",
            "user": {"id": user, "username": user.lower(), "team_id": TEAM}, "team": {"id": TEAM, "domain": "standin"},
            "container": {"type": "message", "message_ts": ts, "channel_id": channel, "is_ephemeral": False,
                          "thread_ts": thread},
            "channel": {"id": channel, "name": "general"},
            "message": {"type": "message", "user": BOT_USER, "ts": ts, "thread_ts": thread,
                        "text": posted.args["text"], "blocks": posted.args["blocks"]},
            "response_url": self.api.response_url("action"),
            "actions": [{**action, "action_ts": str(time.time())}],
        }
        return self.deliver("interactive", payload)[0]

    def submit(self, opened: Call, values: dict[str, str], *, user: str = USER) -> dict[str, Any]:
        """Submit a modal the bot opened (views.open), with one value per input block."""
        view = opened.args["view"]
        state = {block: {"value": ({"type": "static_select", "selected_option": {"value": value}}
                                   if any(b.get("block_id") == block and b["element"]["type"] == "static_select"
                                          for b in view["blocks"]) else {"type": "plain_text_input", "value": value})}
                 for block, value in values.items()}
        payload = {"type": "view_submission", "token": "legacy", "api_app_id": "A0GROUND", "trigger_id": "4.5.6",
                   "user": {"id": user, "username": user.lower(), "team_id": TEAM}, "team": {"id": TEAM},
                   "view": {**view, "id": opened.result["view"]["id"], "state": {"values": state}}}
        return self.deliver("interactive", payload)[0]

    def replies(self, count: int = 1) -> list[Call]:
        """Wait for `count` chat.postMessage calls that succeeded; returns all that did."""

        def ok() -> list[Call]:
            return [c for c in self.api.requests("chat.postMessage") if c.result.get("ok")]

        return list(self.api.wait_until(lambda: len(found := ok()) >= count and found,
                                        what=f"{count} successful chat.postMessage call(s)"))

    def settle(self) -> None:
        """Wait until the bot has finished handling everything delivered so far (acked or answered)."""
        assert self.inflight is not None
        self.inflight.idle()


def stop_socket(handler: Any, standin: SlackStandIn) -> None:
    """Close a Socket Mode handler quickly: from the server side first (spares the client's
    3 s receive timeout), then wake the client's queue poll (spares its 1 s wait)."""
    client = handler.client
    client.auto_reconnect_enabled = False
    standin.drop_sockets()
    # Let the client's receive thread see the close and drop its socket first: closing while it
    # does so races inside slack-sdk (AttributeError on a None socket). slack-sdk signals nothing
    # after that drop (its close listeners run before it), so watch the state it leaves.
    deadline = time.monotonic() + WAIT_S
    while client.is_connected() and time.monotonic() < deadline:
        time.sleep(0.01)
    client.closed = True
    client.message_queue.put(None)
    handler.close()


def run_adapter(mode: str, standin: SlackStandIn, app: Any, adapter: SlackAdapter, monkeypatch: pytest.MonkeyPatch,
                stops: list[Callable[[], None]]) -> Slack:
    """Connect `adapter` to the stand-in over Socket Mode or serve its HTTP endpoint ("socket" or
    "http"); what stops it is appended to `stops`."""
    inflight = InFlight(monkeypatch, adapter.executor)
    http = None
    if mode == "socket":
        handler = adapter.socket_mode(APP_TOKEN)
        handler.connect()
        stops.append(lambda: stop_socket(handler, standin))
    else:
        http = adapter.http_server("127.0.0.1", 0)
        threading.Thread(target=http.serve_forever, daemon=True).start()
        stops.append(http.shutdown)
    stops.append(adapter.close)
    return Slack(mode, standin, app, adapter, http, inflight)


@pytest.fixture
def start(standin: SlackStandIn, tmp_path: Path, embedder: Any, kb_index: Path,
          monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., Slack]]:
    """start(mode, generator=None, hold_risk=None, admin_channel="", environ={}, once=None) -> a running
    Slack bot over `mode` ("socket" or "http"); `environ` adds GROUNDBOT_* settings to config.toml's;
    `once(app)` gives the adapter its once-filter (as `groundbot serve` gives it rows)."""
    stops: list[Callable[[], None]] = []

    def factory(mode: str, *, generator: Any = None, hold_risk: float | None = None, admin_channel: str = "",
                environ: dict[str, str] | None = None, once: Callable[[App], OnceKeys] | None = None) -> Slack:
        data = tmp_path / f"data-{len(stops)}"
        shutil.copytree(kb_index, data / "index")
        cfg = load_config(ROOT / "config.toml", environ={"GROUNDBOT_SLACK_BOT_TOKEN": BOT_TOKEN, **(environ or {})})
        # the admin channel is config's, as build_adapter wires it: it also says Slack has admins to tell
        cfg = cfg.changed(paths__data_dir=data, admins={**cfg.admins, "slack": (ADMIN,)},
                          paths__reingest_roots=(str(tmp_path),),
                          slack__admin_channel=admin_channel or cfg.slack.admin_channel)
        if hold_risk is not None:  # answers at or above this risk wait for review
            review = replace(cfg.core.review, template_risk=hold_risk, hold_risk=hold_risk)
            cfg = cfg.changed(review=review)
        app = build_app(cfg, embedder=embedder, generator=generator)
        # as build_adapter wires it: the answered threads are rows of the transcript database
        threads = SlackThreads(ReplyThreads(app.store.engine)) if cfg.slack.thread_follow_ups else None
        adapter = SlackAdapter(app, bot_token=cfg.secret(cfg.slack.bot_token_env), signing_secret=SECRET,
                               api_base_url=standin.api_url, progress_interval_s=0.0,
                               admin_channel=cfg.slack.admin_channel,
                               threads=threads, once=once(app) if once else None)
        return run_adapter(mode, standin, app, adapter, monkeypatch, stops)

    yield factory
    for stop in stops:
        stop()


def blocks_text(call: Call) -> str:
    return "\n".join(b["text"]["text"] for b in call.args["blocks"] if b["type"] == "section")


def buttons(call: Call) -> list[dict[str, Any]]:
    """The buttons of a posted message, the thumbs of a feedback element as two of them."""
    return [e for b in call.args["blocks"] if b["type"] == "actions" for e in b["elements"]] + [
        {"action_id": e["action_id"], **e[side]} for b in call.args["blocks"] if b["type"] == "context_actions"
        for e in b["elements"] for side in ("positive_button", "negative_button")]


def context_text(call: Call) -> str:
    return "\n".join(e["text"] for b in call.args["blocks"] if b["type"] == "context" for e in b["elements"])


# -- scenarios --------------------------------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
def test_mention_is_answered_in_its_thread(start: Callable[..., Slack], mode: str) -> None:
    bot = start(mode)
    ack, seconds = bot.mention("How do I renew a book?", ts="1711.000100")
    assert seconds < 3.0
    (reply,) = bot.replies(1)
    assert reply.token == BOT_TOKEN
    assert reply.args["channel"] == CHANNEL and reply.args["thread_ts"] == "1711.000100"
    text = blocks_text(reply)
    assert "renew a book online" in text and "[1]" in text and "[C1]" not in text
    assert "*Sources*" in text and "Riverside Library handbook › How do I renew a book?" in text
    (turn,) = bot.app.store.turns()
    assert (turn.platform, turn.team_id, turn.chat_id, turn.thread_id, turn.user_id) == (
        "slack", TEAM, CHANNEL, "1711.000100", USER)
    assert turn.question == "How do I renew a book?" and not turn.refused
    assert [b["value"] for b in buttons(reply)] == [f"up:{turn.id}", f"down:{turn.id}"]
    # Slack's status under the thread says groundbot works on it, its steps rotating, and is cleared after
    shown, cleared = bot.api.wait_for("assistant.threads.setStatus", 2)
    assert (shown.args["channel_id"], shown.args["thread_ts"]) == (CHANNEL, "1711.000100")
    assert shown.args["status"] == "is searching the knowledge base…" and len(shown.args["loading_messages"]) == 3
    assert shown.at <= reply.at <= cleared.at and cleared.args["status"] == ""
    assert bot.api.requests("reactions.add") == []


@pytest.mark.parametrize("mode", MODES)
def test_direct_message_is_a_question(start: Callable[..., Slack], mode: str) -> None:
    bot = start(mode)
    bot.event({"type": "message", "channel_type": "im", "channel": "D0ALICE", "user": USER,
               "text": "When does the library open?", "ts": "1712.000200", "event_ts": "1712.000200", "team": TEAM})
    (reply,) = bot.replies(1)
    assert reply.args["channel"] == "D0ALICE" and reply.args["thread_ts"] == "1712.000200"
    assert "opens at 9 in the morning" in blocks_text(reply)
    (turn,) = bot.app.store.turns()
    assert (turn.chat_id, turn.thread_id, turn.user_id, turn.team_id) == ("D0ALICE", "1712.000200", USER, TEAM)
    # the bot's own messages in the DM are not questions
    bot.event({"type": "message", "channel_type": "im", "channel": "D0ALICE", "user": BOT_USER, "bot_id": "BBOT",
               "text": "an answer", "ts": "1712.000300", "event_ts": "1712.000300"})
    bot.settle()
    assert len(bot.api.requests("chat.postMessage")) == 1 and len(bot.app.store.turns()) == 1


@pytest.mark.parametrize("mode", MODES)
def test_thread_follow_up_uses_earlier_turns(start: Callable[..., Slack], mode: str) -> None:
    bot = start(mode)
    bot.mention("How do I renew a book?", ts="1713.000100")
    bot.replies(1)
    bot.mention("How many times can I do that?", ts="1713.000500", thread_ts="1713.000100")
    first, second = bot.replies(2)
    assert second.args["thread_ts"] == "1713.000100"
    assert "at most three times" in blocks_text(second)
    turns = bot.app.store.turns()
    assert [t.thread_id for t in turns] == ["1713.000100", "1713.000100"]
    assert turns[1].conversation_id == turns[0].conversation_id
    assert {"renew", "book"} <= set(turns[1].retrieval_query.lower().split())  # "do that" read with the earlier words
    assert not turns[1].refused


@pytest.mark.parametrize("mode", MODES)
def test_refusal_offers_suggestions_and_a_press_asks_it(start: Callable[..., Slack], mode: str) -> None:
    bot = start(mode)
    bot.mention(PARKING, ts="1714.000100")
    (refusal,) = bot.replies(1)
    (turn,) = bot.app.store.turns()
    assert turn.refused and turn.refusal_reason
    assert refusal.args["thread_ts"] == "1714.000100"
    assert blocks_text(refusal).startswith(bot.app.config.core.refusal.messages["en"])
    assert f"`{turn.refusal_reason}`" in context_text(refusal)
    *offered, flag = buttons(refusal)
    assert (flag["action_id"], flag["value"]) == ("groundbot_reason_should_answer", str(turn.id))
    assert offered and all(b["action_id"].startswith("groundbot_suggest_") for b in offered)
    assert [bot.app.store.suggestion_text(int(b["value"])) for b in offered] == [b["text"]["text"] for b in offered]
    assert "How do I renew a book?" in [b["text"]["text"] for b in offered]

    pick = next(b for b in offered if b["text"]["text"] == "How do I renew a book?")
    bot.click(refusal, pick["action_id"], user="UBOB0001")
    _, answer = bot.replies(2)
    assert answer.args["channel"] == CHANNEL and answer.args["thread_ts"] == "1714.000100"
    assert "renew a book online" in blocks_text(answer)
    assert "<@UBOB0001> asked: How do I renew a book?" in context_text(answer)
    first, second = bot.app.store.turns()
    assert (second.question, second.user_id, second.thread_id, second.team_id) == (
        "How do I renew a book?", "UBOB0001", "1714.000100", TEAM)
    assert second.conversation_id == first.conversation_id and not second.refused


@pytest.mark.parametrize("mode", MODES)
def test_feedback_buttons_are_stored_with_the_turn(start: Callable[..., Slack], mode: str) -> None:
    bot = start(mode)
    bot.mention("When does the library open?", ts="1715.000100")
    (reply,) = bot.replies(1)
    (turn,) = bot.app.store.turns()
    assert turn.id is not None and not turn.refused
    assert {b["action_id"] for b in buttons(reply)} == {"groundbot_feedback"}  # Slack's feedback element
    [feedback] = [b for b in reply.args["blocks"] if b["type"] == "context_actions"]
    [thumbs] = feedback["elements"]
    assert (thumbs["type"], thumbs["action_id"]) == ("feedback_buttons", "groundbot_feedback")
    assert (thumbs["positive_button"]["value"], thumbs["negative_button"]["value"]) == (f"up:{turn.id}",
                                                                                       f"down:{turn.id}")
    bot.click(reply, FEEDBACK_DOWN, user="UBOB0001")
    (modal,) = bot.api.wait_for("views.open")  # a thumbs-down asks why
    assert modal.args["view"]["callback_id"] == "groundbot_feedback_reason"
    assert modal.args["view"]["private_metadata"] == str(turn.id) and modal.args["trigger_id"] == "1.2.3"
    bot.submit(modal, {"reason": "wrong", "comment": "the hours changed"}, user="UBOB0001")
    queued = bot.api.wait_for("chat.postMessage", 2)[-1].args
    assert (queued["channel"], queued["text"]) == ("UBOB0001", "Thanks, an admin will look at it.")
    bot.click(reply, FEEDBACK_UP, user=USER)
    thanks = bot.api.wait_for("chat.postEphemeral")[0].args
    assert (thanks["channel"], thanks["user"], thanks["thread_ts"]) == (CHANNEL, USER, "1715.000100")
    assert thanks["text"] == "Thanks for the feedback."
    votes = {(f.user_id, f.value, f.reason, f.comment) for f in bot.app.store.feedback_for(turn.id)}
    assert votes == {("UBOB0001", -1, "wrong", "the hours changed"), (USER, 1, "", "")}
    [item] = bot.app.desk.queue.entries()
    assert (item.turn_id, item.origin, item.reason, item.comment) == (turn.id, "feedback", "wrong", "the hours changed")


@pytest.mark.parametrize("mode", MODES)
def test_redelivered_event_is_handled_once(start: Callable[..., Slack], mode: str) -> None:
    bot = start(mode)
    bot.mention("How do I get a library card?", ts="1716.000100", event_id="EvSAME0001")
    bot.replies(1)
    ack, seconds = bot.mention("How do I get a library card?", ts="1716.000100", event_id="EvSAME0001", retry=1)
    assert seconds < 3.0
    # a different event id for the same message (app_mention + message.im) is also one question
    bot.mention("How do I get a library card?", ts="1716.000100", event_id="EvOTHER001")
    bot.mention("When does the library open?", ts="1716.000900")  # a marker that processing went on
    bot.replies(2)
    bot.settle()
    posted = bot.api.requests("chat.postMessage")
    assert [c.args["thread_ts"] for c in posted] == ["1716.000100", "1716.000900"]
    assert [t.question for t in bot.app.store.turns()] == ["How do I get a library card?", "When does the library open?"]
    assert len([c for c in bot.api.requests("assistant.threads.setStatus") if c.args["status"]]) == 2


@pytest.mark.parametrize("mode", MODES)
def test_admin_reingest_reports_progress_and_summary(start: Callable[..., Slack], mode: str, tmp_path: Path) -> None:
    bot = start(mode)
    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "parking.md").write_text(
        "# Parking\n\n## Where can I park my car?\n\nMembers can park for free in the garage behind the library, "
        "entrance on Mill Street, for up to three hours.\n", encoding="utf-8")
    version = bot.app.index.version()
    ack = bot.command("/groundbot-reingest", str(extra))
    assert "Re-ingesting" in ack["text"] and str(extra) in ack["text"]
    started = bot.api.wait_for("chat.postMessage")[0]
    assert started.args["channel"] == CHANNEL and f"<@{ADMIN}>" in started.args["text"]
    bot.api.wait_until(lambda: any("done" in c.args.get("text", "") for c in bot.api.requests("chat.update")),
                       what="the re-ingest summary")
    updates = bot.api.requests("chat.update")
    assert all(u.args["ts"] == started.result["ts"] and u.args["channel"] == CHANNEL for u in updates)
    assert len(updates) >= 2  # progress, then the summary
    assert "added 1" in updates[-1].args["text"]
    assert bot.app.index.version() != version
    bot.mention("Where can I park my car?", ts="1717.000100")
    answer = bot.replies(2)[-1]
    assert "garage behind the library" in blocks_text(answer)


@pytest.mark.parametrize("mode", MODES)
def test_admin_stats_and_review_queue_are_shown_to_the_admin_only(start: Callable[..., Slack], mode: str) -> None:
    bot = start(mode)
    bot.mention("How do I renew a book?", ts="1718.000100")
    bot.replies(1)
    assert bot.command("/groundbot-stats") == {}  # a bare ack; the numbers follow privately
    (stats,) = bot.api.wait_for("respond")
    assert stats.args["response_type"] == "ephemeral" and "Turns: 1 (answered 1, refused 0)" in stats.args["text"]
    assert "refusal rate 0.0" in stats.args["text"] and "Review queue: 0 waiting" in stats.args["text"]
    bot.command("/groundbot-review")
    review = bot.api.wait_for("respond", 2)[1]
    assert (review.args["text"], review.args["response_type"]) == ("The review queue is empty.", "ephemeral")
    assert len(bot.api.requests("chat.postMessage")) == 1  # nothing in the channel


@pytest.mark.parametrize("mode", MODES)
def test_non_admin_commands_are_refused_and_nothing_runs(start: Callable[..., Slack], mode: str) -> None:
    bot = start(mode)
    version = bot.app.index.version()
    for command in ("/groundbot-reingest", "/groundbot-stats", "/groundbot-review"):
        ack = bot.command(command, "/etc", user=USER)
        assert ack["text"].startswith("Sorry, only admins can")
        assert ack.get("response_type", "ephemeral") == "ephemeral"
    bot.settle()
    assert [c.method for c in bot.api.calls if c.method not in ("auth.test", "apps.connections.open")] == []
    assert bot.app.index.version() == version and bot.app.store.turns() == []


def test_wrongly_signed_requests_get_401(start: Callable[..., Slack]) -> None:
    bot = start("http")
    body = json.dumps({"type": "event_callback", "team_id": TEAM, "event_id": "EvFORGED01",
                       "event": {"type": "app_mention", "user": USER, "text": f"<@{BOT_USER}> hi", "ts": "1.2",
                                 "channel": CHANNEL}})
    forged = bot.post(body, "application/json", sign(body, secret="not-the-secret"))
    stale = bot.post(body, "application/json", sign(body, timestamp=int(time.time()) - 3600))
    unsigned = bot.post(body, "application/json")
    tampered = bot.post(body.replace("hi", "hello"), "application/json", sign(body))
    assert [r[0] for r in (forged, stale, unsigned, tampered)] == [401, 401, 401, 401]
    cmd = urlencode({"command": "/groundbot-reingest", "user_id": ADMIN, "channel_id": CHANNEL, "text": ""})
    assert bot.post(cmd, "application/x-www-form-urlencoded", sign(cmd, secret="nope"))[0] == 401
    bot.settle()
    assert {c.method for c in bot.api.calls} == {"auth.test"}  # the start-up checks only
    assert bot.app.store.turns() == []
    # the same body, rightly signed, is accepted
    assert bot.post(body, "application/json", sign(body))[0] == 200
    assert bot.replies(1)
    # Slack's URL check when the request URL is set in the app settings
    challenge = json.dumps({"type": "url_verification", "token": "legacy", "challenge": "c-123"})
    status, text, _ = bot.post(challenge, "application/json", sign(challenge))
    assert status == 200 and "c-123" in text


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["socket"])
def test_rate_limited_reply_is_retried_after_retry_after(start: Callable[..., Slack], mode: str) -> None:
    bot = start(mode)
    bot.api.fail_next("chat.postMessage", status=429, retry_after=1)
    bot.mention("When does the library open?", ts="1719.000100")
    (reply,) = bot.replies(1)
    limited, retried = bot.api.requests("chat.postMessage")
    assert limited.status == 429 and retried is reply
    assert retried.at - limited.at >= 1.0
    assert retried.args["blocks"] == limited.args["blocks"] and retried.args["thread_ts"] == "1719.000100"
    assert len(bot.app.store.turns()) == 1


@pytest.mark.parametrize("mode", ["http"])
def test_long_answer_is_split_into_sections(start: Callable[..., Slack], mode: str) -> None:
    bot = start(mode)
    bot.mention("What are the complete reading room rules?", ts="1720.000100")
    (reply,) = bot.replies(1)
    (turn,) = bot.app.store.turns()
    assert len(turn.answer) > 2 * SECTION_TEXT_LIMIT
    sections = [b["text"]["text"] for b in reply.args["blocks"] if b["type"] == "section"]
    answer_parts = [s for s in sections if not s.startswith("*Sources*")]
    assert len(answer_parts) >= 3 and all(len(s) <= SECTION_TEXT_LIMIT for s in sections)
    assert " ".join(answer_parts).replace("\n", " ") == turn.answer.replace("[C1]", "[1]")
    assert "<https://library.example/rules|faq › What are the complete reading room rules?>" in blocks_text(reply)
    assert len(reply.args["blocks"]) <= 50 and len(reply.args["text"]) <= 3000


@pytest.mark.parametrize("mode", MODES)
def test_failure_while_answering_is_a_recorded_refusal(start: Callable[..., Slack], mode: str) -> None:
    class BrokenGenerator:
        name = "broken"
        mode = Mode.LANGUAGE_MODEL

        def generate(self, question: str, hits: Any, reading: str = "") -> Generation:
            raise ConnectionError("model server went away")

    bot = start(mode, generator=BrokenGenerator())
    bot.mention("How do I renew a book?", ts="1721.000100")
    (reply,) = bot.replies(1)
    assert reply.args["thread_ts"] == "1721.000100"
    assert blocks_text(reply).startswith(bot.app.config.core.refusal.messages["en"])
    assert f"`{reasons.LLM_UNAVAILABLE}`" in context_text(reply)
    (turn,) = bot.app.store.turns()
    assert turn.refused and turn.refusal_reason == reasons.LLM_UNAVAILABLE
    assert (turn.chat_id, turn.thread_id, turn.user_id, turn.team_id) == (CHANNEL, "1721.000100", USER, TEAM)


def test_ack_comes_before_the_work(start: Callable[..., Slack]) -> None:
    release = threading.Event()

    class SlowGenerator:
        name = "slow"
        mode = Mode.LANGUAGE_MODEL

        def generate(self, question: str, hits: Any, reading: str = "") -> Generation:
            release.wait(WAIT_S)
            return Generation(text="", llm_called=False)

    bot = start("http", generator=SlowGenerator())
    _, seconds = bot.mention("How do I renew a book?", ts="1722.000100")
    assert seconds < 1.0 and bot.api.requests("chat.postMessage") == []
    assert bot.api.wait_for("assistant.threads.setStatus")  # the status while working
    release.set()
    (reply,) = bot.replies(1)
    assert reply.args["thread_ts"] == "1722.000100"
    assert bot.app.store.turns()[0].refusal_reason == reasons.INSUFFICIENT_CONTEXT


def test_question_text_unwraps_slack_markup() -> None:
    assert question_text("<@UBOT> what is <https://a.example/x|this page> &amp; <#C1|general>?", "UBOT") == \
        "what is this page & #general?"
    assert question_text("hi <@UOTHER|bob> and <mailto:a@b.example>", "UBOT") == "hi @bob and mailto:a@b.example"


# -- the groundbot slack command ----------------------------------------------------------
def test_cli_refuses_to_start_without_its_secrets(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    for name in ("GROUNDBOT_SLACK_BOT_TOKEN", "GROUNDBOT_SLACK_APP_TOKEN", "GROUNDBOT_SLACK_SIGNING_SECRET"):
        monkeypatch.delenv(name, raising=False)
    args = ["--config", str(ROOT / "config.toml"), "--data-dir", str(tmp_path), "slack"]
    assert cli_main(args) == 2 and "GROUNDBOT_SLACK_BOT_TOKEN" in capsys.readouterr().err
    monkeypatch.setenv("GROUNDBOT_SLACK_BOT_TOKEN", BOT_TOKEN)
    assert cli_main(args) == 2 and "GROUNDBOT_SLACK_APP_TOKEN" in capsys.readouterr().err
    assert cli_main([*args, "--http"]) == 2 and "GROUNDBOT_SLACK_SIGNING_SECRET" in capsys.readouterr().err
    assert not (tmp_path / "transcripts.db").exists()  # nothing was built


def test_config_names_the_secrets_and_the_api_base_url(standin: SlackStandIn, tmp_path: Path, embedder: Any,
                                                       kb_index: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(f"""
[slack]
bot_token_env = "ACME_SLACK_BOT"
app_token_env = "ACME_SLACK_APP"
api_base_url = "{standin.api_url}"
""", encoding="utf-8")
    cfg = load_config(config, data_dir=tmp_path / "data",
                      environ={"ACME_SLACK_BOT": BOT_TOKEN, "ACME_SLACK_APP": APP_TOKEN, "GROUNDBOT_SLACK_BOT_TOKEN": "no"})
    shutil.copytree(kb_index, tmp_path / "data" / "index")
    app = build_app(cfg, embedder=embedder)
    secrets = slack_secrets(cfg, http=False)
    adapter = build_adapter(cfg, app, secrets, ReplyThreads(app.store.engine))
    handler = adapter.socket_mode(secrets.app_token)
    handler.connect()
    try:
        assert standin.wait_for("apps.connections.open")[0].token == APP_TOKEN
        bot = Slack("socket", standin, app, adapter, None)
        bot.mention("How do I renew a book?", ts="1730.000100")
        (reply,) = bot.replies(1)
        assert reply.token == BOT_TOKEN and reply.args["thread_ts"] == "1730.000100"
        assert standin.requests("auth.test")[0].token == BOT_TOKEN
    finally:
        stop_socket(handler, standin)
        adapter.close()


# -- Block Kit limits (pure rendering) --------------------------------------------------------
def _decision(**fields: Any) -> Decision:
    base: dict[str, Any] = dict(
        question="q", normalized_question="q", retrieval_query="q", answer="", refused=False, refusal_reason="",
        refusal_message="", explanation="", status="PASS", state="replied", reasons=[], checks_passed=[],
        checks_failed=[], scores={}, llm_called=False, sources=[], suggestions=[], uncovered_claims=[],
        latency_ms={}, index_version="v", config_hash="h", language="en", turn_id=7)
    return Decision(**{**base, **fields})


def test_markup_is_escaped_and_sections_fit_after_escaping() -> None:
    pieces = fit("a & b " * 1500)
    assert len(pieces) > 1 and all(len(p) <= SECTION_TEXT_LIMIT for p in pieces)
    assert all("&amp;" in p and " & " not in p for p in pieces)
    assert fit("<!channel> <@U1> <https://x|y>") == ["&lt;!channel&gt; &lt;@U1&gt; &lt;https://x|y&gt;"]


def test_source_links_and_suggestion_buttons_stay_within_slack_limits() -> None:
    src = Source(2, "doc", "c", "A|B > C", "", "/x", "https://example.org/a?b=1&c=2", 0.9)
    assert source_line(src) == "2. <https://example.org/a?b=1&amp;c=2|A¦B &gt; C>"
    assert source_line(replace(src, url="")) == "2. A|B &gt; C (`doc`)"
    long_text = "Which of the many documents explains the " + "very " * 30 + "long question?"
    refusal = _decision(refused=True, refusal_reason="LOW_CONFIDENCE", refusal_message="No.", explanation="why",
                        suggestions=[Suggestion(41, long_text), Suggestion(0, "not stored")])
    (msg,) = render_decision(refusal)
    btn, flag = [e for b in msg.blocks if b["type"] == "actions" for e in b["elements"]]
    assert flag["action_id"] == "groundbot_reason_should_answer" and flag["value"] == "7"
    assert btn["value"] == "41" and len(btn["text"]["text"]) <= 75 and btn["text"]["text"].endswith("…")


def test_more_than_fifty_blocks_spread_over_messages() -> None:
    blocks = [section(f"part {i}") for i in range(2 * MAX_BLOCKS + 3)]
    messages = chunk_blocks(blocks, "fallback")
    assert [len(m.blocks) for m in messages] == [MAX_BLOCKS, MAX_BLOCKS, 3]
    assert messages[0].text == "fallback" and [b for m in messages for b in m.blocks] == blocks
    huge = _decision(answer="\n\n".join("x" * 2900 for _ in range(60)) + " [C1]")
    parts = render_decision(huge)
    assert len(parts) == 2 and parts[-1].blocks[-1]["block_id"] == "groundbot_feedback"
    assert all(len(m.blocks) <= MAX_BLOCKS for m in parts)


@pytest.mark.parametrize("thread_before", ["answered", "not answered", "unreadable"])
def test_a_question_taken_over_from_a_dead_worker_is_answered_only_if_its_thread_lacks_the_answer(
        start: Callable[..., Slack], tmp_path: Path, thread_before: str) -> None:
    """`groundbot serve`: a worker killed after Slack accepted its answer, before the question
    was marked done, leaves a claim another worker takes over; the answer's metadata in the
    thread says it went out. Unreadable thread (no history scope): answered again, not lost."""
    bot = start("http", once=lambda app: SharedOnce(Deliveries(app.store.engine, stale_s=0.0),  # never renewed: stale
                                                    Metrics(), Platform.SLACK))
    once = bot.adapter.wiring.once
    assert isinstance(once, SharedOnce)
    deliveries = once.deliveries
    bot.mention("When does the library open?", ts="1719.000100")  # an ordinary question: no read-back
    (first,) = bot.replies(1)
    assert first.args["metadata"]["event_type"] == ANSWER_EVENT and not bot.api.requests("conversations.replies")

    ts = "1719.000200"
    Deliveries(bot.app.store.engine).claim(f"slack:message:{CHANNEL}:{ts}")  # the dead worker's claim
    uid = message_uid("slack", TEAM, CHANNEL, ts)
    if thread_before == "answered":  # Slack had accepted the dead worker's answer
        WebClient(token=BOT_TOKEN, base_url=bot.api.api_url).chat_postMessage(
            channel=CHANNEL, thread_ts=ts, text="The library opens at 9.", metadata=answer_metadata(uid))
    if thread_before == "unreadable":
        bot.api.fail_next("conversations.replies", error="missing_scope")
    bot.mention("How do I renew a book?", ts=ts)  # the event again, as the sweeper replays it
    bot.settle()
    (read,) = bot.api.requests("conversations.replies")
    assert (read.args["channel"], read.args["ts"]) == (CHANNEL, ts)
    answers = [c for c in bot.api.requests("chat.postMessage") if c.args.get("thread_ts") == ts]
    assert len(answers) == 1  # the dead worker's, or the one this worker posted
    if thread_before != "answered":
        assert "renew a book online" in blocks_text(answers[-1])
        assert answers[-1].args["metadata"]["event_payload"] == {"question": uid}
    asked = [t.question for t in bot.app.store.turns()]
    assert asked == ["When does the library open?"] + ([] if thread_before == "answered" else ["How do I renew a book?"])
    assert "claimed" not in deliveries.claims()  # nothing left for a sweeper: the question is done either way


def test_the_feedback_element_is_valid_block_kit_and_older_buttons_still_vote() -> None:
    from slack_sdk.models.blocks import Block

    from adapters.slack.rendering import feedback_block, feedback_vote

    block = feedback_block(42, "fa")
    Block.parse(block).validate_json()  # slack-sdk's own model of context_actions / feedback_buttons
    assert Block.parse(block).to_dict() == block
    assert feedback_vote({"action_id": "groundbot_feedback", "value": "down:42"}) == (42, -1)
    assert feedback_vote({"action_id": FEEDBACK_UP, "value": "42"}) == (42, 1)  # an answer posted before
    assert feedback_vote({"action_id": "groundbot_feedback", "value": "sideways:42"}) is None
    assert feedback_vote({"action_id": "groundbot_feedback", "value": "up:x"}) is None


@pytest.mark.parametrize("mode", MODES)
def test_a_workspace_without_statuses_gets_the_eyes_reaction_and_one_warning(
        start: Callable[..., Slack], mode: str, caplog: pytest.LogCaptureFixture) -> None:
    bot = start(mode)
    bot.api.fail_next("assistant.threads.setStatus", error="missing_scope")
    with caplog.at_level("WARNING", logger="groundbot.slack"):
        bot.mention("How do I renew a book?", ts="1723.000100")
        bot.replies(1)
        bot.settle()
        bot.mention("When does the library open?", ts="1723.000200")
        bot.replies(2)
        bot.settle()
    assert len(bot.api.requests("assistant.threads.setStatus")) == 1  # not tried again
    added = [c.args for c in bot.api.requests("reactions.add")]
    assert added == [{"channel": CHANNEL, "timestamp": ts, "name": "eyes"} for ts in ("1723.000100", "1723.000200")]
    assert [c.args for c in bot.api.requests("reactions.remove")] == added
    assert sum("refused a status" in r.getMessage() for r in caplog.records) == 1


def test_a_token_with_chat_write_alone_shows_the_status_and_is_told_of_the_history_scopes(
        start: Callable[..., Slack], standin: SlackStandIn, caplog: pytest.LogCaptureFixture) -> None:
    """assistant.threads.setStatus takes chat:write (Slack's change of 2026-03-05): a token without
    assistant:write shows the status, no reaction; only the missing history scopes are told, once."""
    standin.scopes = ["app_mentions:read", "im:history", "chat:write", "reactions:write", "commands"]
    with caplog.at_level("WARNING", logger="groundbot.slack"):
        bot = start("socket")
        bot.mention("How do I renew a book?", ts="1724.000100")
        bot.replies(1)
        bot.settle()
    shown = [c for c in bot.api.requests("assistant.threads.setStatus") if c.args["status"]]
    assert [(c.args["thread_ts"], c.result["ok"]) for c in shown] == [("1724.000100", True)]
    assert bot.api.requests("reactions.add") == []
    told = [r.getMessage() for r in caplog.records]
    assert not any("assistant:write" in m or "refused a status" in m for m in told), told
    assert sum("lacks channels:history and groups:history" in m for m in told) == 1
