"""`groundbot serve` end to end: the Starlette app on real uvicorn servers on 127.0.0.1, real
HTTP requests, real slack-bolt and python-telegram-bot against their local stand-ins.

"Two workers" are two servers, each with its own App (own model handle, own index copy, own
process-local state) sharing one transcript database, as `--workers 2` processes do: anything
they agree on must come from the database. The two-worker conversation and Slack retry tests
run on SQLite and on the real PostgreSQL server the test session starts.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn

from bot.app import App
from bot.config import Config, load_config
from bot.server.http_app import build_asgi
from bot.settings import SlackSettings, TelegramSettings
from storage.records.reply_threads import ReplyThreads
from storage.records.shared_state import SharedState
from tests.scenario.test_slack import sign
from tests.standins.slack import BOT_USER, TEAM, SlackStandIn
from tests.standins.telegram import TelegramStandIn
from tests.waits import WAIT_S, wait_until

ROOT = Path(__file__).resolve().parents[2]
ANSWERED = "How do I re-ingest documents?"
FOLLOW_UP = "And how long does it take?"
OFF_TOPIC = "What is the capital of Mongolia?"
API_TOKEN = "api-token-for-tests"
SLACK_SECRET = "standin-signing-secret"
TG_SECRET = "tg-webhook-secret_1"

pytestmark = pytest.mark.filterwarnings("ignore:.*retry_after.*:telegram.warnings.PTBDeprecationWarning")


class Server:
    """One uvicorn server running an ASGI app in a thread, on a free port of 127.0.0.1."""

    def __init__(self, asgi: Any, sock: socket.socket | None = None) -> None:
        """`sock`: another server's listening socket, shared as `serve --workers N` shares one."""
        self.asgi = asgi
        self.sock = sock or socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if sock is None:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.server = uvicorn.Server(uvicorn.Config(asgi, log_level="warning", lifespan="on",
                                                    timeout_graceful_shutdown=int(WAIT_S)))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def service(self) -> Any:
        return self.asgi.state.service

    def get(self, path: str) -> httpx.Response:
        return httpx.get(self.url + path, timeout=WAIT_S)

    def wait_ready(self) -> None:
        def ready() -> bool:
            try:
                return self.get("/readyz").status_code == 200
            except httpx.TransportError:
                return False

        try:
            wait_until(ready)
        except AssertionError:
            raise AssertionError(f"/readyz never answered 200: {self.service.error}") from None

    def ask(self, question: str, conversation: str | None = None, token: str | None = API_TOKEN) -> httpx.Response:
        body: dict[str, Any] = {"question": question, "user": "web-1"}
        if conversation:
            body["conversation"] = conversation
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.post(self.url + "/api/ask", json=body, headers=headers, timeout=WAIT_S)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(WAIT_S)
        self.sock.close()


@contextmanager
def serving(*asgis: Any) -> Iterator[list[Server]]:
    servers = [Server(a) for a in asgis]
    try:
        for s in servers:
            s.wait_ready()
        yield servers
    finally:
        for s in servers:
            s.stop()


def config_with(environ: dict[str, str], **fields: Any) -> Config:
    return load_config(ROOT / "config.toml", environ=environ).changed(**fields)


@pytest.fixture
def shared_db(tmp_path: Path) -> str:
    return f"sqlite:///{(tmp_path / 'shared.db').as_posix()}"


def worker(make_app: Callable[..., App], cfg: Config, db_url: str, **kwargs: Any) -> Any:
    """The ASGI app of one worker over the shared database (its App made on the lifespan thread)."""
    return build_asgi(cfg, app_factory=lambda: make_app(config=cfg, storage__database_url=db_url), **kwargs)


# -- operations -------------------------------------------------------------------------
@pytest.mark.slow
def test_readyz_is_503_until_the_model_and_index_are_loaded(make_app: Callable[..., App], shared_db: str) -> None:
    cfg = config_with({})
    release = threading.Event()

    def slow_factory() -> App:
        assert release.wait(WAIT_S)
        return make_app(config=cfg, storage__database_url=shared_db)

    server = Server(build_asgi(cfg, app_factory=slow_factory))
    try:
        def answered() -> httpx.Response | None:
            try:
                return server.get("/healthz")
            except httpx.TransportError:
                return None

        health = wait_until(answered, what="/healthz to answer")
        assert health.status_code == 200 and health.text == "ok"
        not_ready = server.get("/readyz")
        assert not_ready.status_code == 503 and not_ready.json()["ready"] is False
        assert server.ask(ANSWERED).status_code == 503  # nothing answered before the model is there
        release.set()
        server.wait_ready()
        ready = server.get("/readyz").json()
        assert ready["ready"] and ready["database_readable"] and ready["index_chunks"] > 0
        assert "groundbot_ready 1.0" in server.get("/metrics").text
    finally:
        release.set()
        server.stop()


@pytest.mark.slow
def test_a_worker_sharing_the_port_takes_no_connection_until_it_is_ready(make_app: Callable[..., App],
                                                                         shared_db: str) -> None:
    """A replacement worker loading its model must leave the shared port to its ready siblings:
    while it loaded it answered 503 to whatever it took, and a Slack event whose quick retries
    all met it was lost (bench.system.load, one run in six)."""
    cfg = config_with({})
    release = threading.Event()

    def slow_factory() -> App:
        assert release.wait(WAIT_S)
        return make_app(config=cfg, storage__database_url=shared_db)

    with serving(worker(make_app, cfg, shared_db)) as [ready]:
        # its own descriptor of the shared socket, as each spawned worker has: the two servers
        # close what they were given without pulling the socket from under each other
        loading = Server(build_asgi(cfg, app_factory=slow_factory, accept_when_ready=True), sock=ready.sock.dup())
        try:
            time.sleep(0.5)  # its lifespan has begun building the App
            assert [ready.get("/readyz").status_code for _ in range(40)] == [200] * 40
            assert not loading.server.started
            release.set()
            wait_until(lambda: loading.server.started, what="the loading server to start")  # built: it takes its share now
            assert loading.service.ready
        finally:
            release.set()
            loading.stop()


@pytest.mark.slow
def test_api_ask_needs_the_token_and_gives_the_ask_json_decision(make_app: Callable[..., App], shared_db: str) -> None:
    cfg = config_with({"GROUNDBOT_API_TOKEN": API_TOKEN})
    with serving(worker(make_app, cfg, shared_db)) as [server]:
        assert server.ask(ANSWERED, token=None).status_code == 401
        assert server.ask(ANSWERED, token="wrong").status_code == 401
        bad = httpx.post(server.url + "/api/ask", content=b"not json",
                         headers={"Authorization": f"Bearer {API_TOKEN}"}, timeout=WAIT_S)
        assert bad.status_code == 400 and "JSON" in bad.json()["error"]
        answered = server.ask(ANSWERED, conversation="widget-1")
        assert answered.status_code == 200
        d = answered.json()
        assert d["refused"] is False and d["sources"] and d["recorded"] == "database"
        assert isinstance(d["latency_ms"], float) and "total" in d["stage_latency_ms"]  # the `ask --json` shape
        refused = server.ask(OFF_TOPIC).json()
        assert refused["refused"] is True and refused["refusal_reason"]
        app = server.service.app
        keys = [(t.platform, t.chat_id, t.user_id) for t in app.store.turns()]
        assert keys[0] == ("api", "widget-1", "web-1") and keys[1][0] == "api" and keys[1][1] != "widget-1"
        metrics = server.get("/metrics").text
        assert f'groundbot_turns_total{{outcome="refused",reason="{refused["refusal_reason"]}"}} 1.0' in metrics
        assert 'groundbot_turns_total{outcome="answered",reason=""} 1.0' in metrics
        assert 'groundbot_stage_seconds_count{stage="retrieve"} 2.0' in metrics
        assert "groundbot_review_queue_depth 0.0" in metrics


@pytest.mark.slow
def test_one_conversation_alternating_between_two_workers_keeps_order_and_context(
        make_app: Callable[..., App], database_url: str) -> None:
    cfg = config_with({"GROUNDBOT_API_TOKEN": API_TOKEN})
    with serving(worker(make_app, cfg, database_url), worker(make_app, cfg, database_url)) as (a, b):
        first = a.ask(ANSWERED, conversation="c-1").json()
        second = b.ask(FOLLOW_UP, conversation="c-1").json()
        assert first["history"] == "none" and second["history"] == "loaded"
        assert second["resolution"]["previous"] == ANSWERED  # resolved with turn 1 from worker A
        assert "documents" in second["resolution"]["terms"] and second["question"] == FOLLOW_UP  # read with turn 1
        # both workers at once on one conversation: the lease runs them one after the other
        with httpx.Client(timeout=WAIT_S) as client:
            async_results: list[httpx.Response] = []

            def send(server: Server, q: str) -> None:
                async_results.append(client.post(server.url + "/api/ask", json={"question": q, "conversation": "c-1"},
                                                 headers={"Authorization": f"Bearer {API_TOKEN}"}))

            threads = [threading.Thread(target=send, args=(s, q)) for s, q in ((a, "What is a reason code?"),
                                                                                (b, "What does the verifier check?"))]
            for t in threads:
                t.start()
            for t in threads:
                t.join(WAIT_S)
        assert [r.status_code for r in async_results] == [200, 200]
        third = a.ask("Which file holds the settings?", conversation="c-1").json()
        assert third["history"] == "loaded"
        turns = [t for t in a.service.app.store.turns() if t.chat_id == "c-1"]
        assert len(turns) == 5 and [t.question for t in turns][:2] == [ANSWERED, FOLLOW_UP]
        assert turns[-1].question == "Which file holds the settings?"
        starts = [t.created_at for t in turns]
        assert starts == sorted(starts)
        assert SharedState(a.service.app.store.engine).counts()["leases"] == 0


@pytest.mark.slow
def test_shutdown_finishes_the_turn_in_flight(make_app: Callable[..., App], database_url: str) -> None:
    cfg = config_with({"GROUNDBOT_API_TOKEN": API_TOKEN})
    with serving(worker(make_app, cfg, database_url)) as [server]:
        started = threading.Event()
        app = server.service.app
        real_ask = app.ask

        def slow_ask(msg: Any) -> Any:
            started.set()
            time.sleep(1.0)  # still answering when the stop comes
            return real_ask(msg)

        app.ask = slow_ask  # type: ignore[method-assign]
        result: list[httpx.Response] = []
        client = threading.Thread(target=lambda: result.append(server.ask(ANSWERED, conversation="bye")))
        client.start()
        assert started.wait(WAIT_S)
        server.stop()  # what SIGTERM does: stop accepting, finish requests in flight, then exit
        client.join(WAIT_S)
        assert not server.thread.is_alive()
        assert [r.status_code for r in result] == [200] and result[0].json()["recorded"] == "database"


# -- Slack -------------------------------------------------------------------------------
def _slack_event(text: str, ts: str, event_id: str) -> str:
    event = {"type": "app_mention", "user": "UALICE01", "text": f"<@{BOT_USER}> {text}", "ts": ts,
             "channel": "C0GENERAL", "team": TEAM, "event_ts": ts}
    return json.dumps({"token": "legacy", "team_id": TEAM, "api_app_id": "A0GROUND", "type": "event_callback",
                       "event_id": event_id, "event_time": int(time.time()), "event": event,
                       "authorizations": [{"team_id": TEAM, "user_id": BOT_USER, "is_bot": True}]})


@contextmanager
def slack_workers(make_app: Callable[..., App], database_url: str, monkeypatch: pytest.MonkeyPatch,
                  **slack: Any) -> Iterator[tuple[SlackStandIn, Any, Any]]:
    """Two serve workers on one database, their Slack client pointed at the Slack stand-in;
    `slack` overrides [slack] settings."""
    for name in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy"):
        monkeypatch.delenv(name, raising=False)
    with SlackStandIn() as api:
        env = {"GROUNDBOT_SLACK_BOT_TOKEN": "xoxb-standin-bot", "GROUNDBOT_SLACK_SIGNING_SECRET": SLACK_SECRET}
        cfg = config_with(env, slack=replace(SlackSettings(), api_base_url=api.api_url, **slack))
        with serving(worker(make_app, cfg, database_url), worker(make_app, cfg, database_url)) as (a, b):
            yield api, a, b


@pytest.mark.slow
def test_a_slack_retry_reaching_another_worker_is_answered_once(make_app: Callable[..., App], database_url: str,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    with slack_workers(make_app, database_url, monkeypatch) as (api, a, b):
        body = _slack_event(ANSWERED, "1700000000.000100", "Ev0RETRY1")
        unsigned = httpx.post(a.url + "/slack/events", content=body, timeout=WAIT_S,
                              headers={"Content-Type": "application/json"})
        assert unsigned.status_code == 401  # bolt checks the signature
        first = httpx.post(a.url + "/slack/events", content=body, timeout=WAIT_S,
                           headers={"Content-Type": "application/json", **sign(body, secret=SLACK_SECRET)})
        assert first.status_code == 200
        retry = httpx.post(b.url + "/slack/events", content=body, timeout=WAIT_S,
                           headers={"Content-Type": "application/json", **sign(body, secret=SLACK_SECRET),
                                    "X-Slack-Retry-Num": "1", "X-Slack-Retry-Reason": "http_timeout"})
        assert retry.status_code == 200
        api.wait_until(lambda: api.requests("chat.postMessage"), what="the answer")
        for s in (a, b):  # every listener either worker started has finished
            s.service.slack.executor.shutdown(wait=True)
        posted = api.requests("chat.postMessage")
        assert len(posted) == 1 and posted[0].args["thread_ts"] == "1700000000.000100"
        assert len(a.service.app.store.turns()) == 1
        assert 'groundbot_duplicate_deliveries_total{platform="slack"} 1.0' in b.get("/metrics").text


@pytest.mark.slow
def test_a_slack_thread_reply_reaching_another_worker_is_a_follow_up(make_app: Callable[..., App], database_url: str,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Who was answered in which thread is a row every worker reads: the asker's reply in the
    thread, without a mention, reaches the worker that did not answer it and continues there."""
    with slack_workers(make_app, database_url, monkeypatch) as (api, a, b):
        thread = "1700000000.000100"

        def post(server: Server, body: str) -> None:
            r = httpx.post(server.url + "/slack/events", content=body, timeout=WAIT_S,
                           headers={"Content-Type": "application/json", **sign(body, secret=SLACK_SECRET)})
            assert r.status_code == 200

        post(a, _slack_event(ANSWERED, thread, "Ev0THREAD1"))
        api.wait_until(lambda: api.requests("chat.postMessage"), what="the answer")
        a.service.slack.executor.shutdown(wait=True)  # answered, and who it answered is stored
        reply = json.loads(_slack_event(FOLLOW_UP, "1700000000.000200", "Ev0THREAD2"))
        reply["event"].update(type="message", channel_type="channel", text=FOLLOW_UP, thread_ts=thread)
        post(b, json.dumps(reply))
        api.wait_until(lambda: len(api.requests("chat.postMessage")) >= 2, what="the follow-up's answer")
        b.service.slack.executor.shutdown(wait=True)
        first, second = api.requests("chat.postMessage")
        assert second.args["thread_ts"] == thread and second.args["channel"] == "C0GENERAL"
        asked, follow_up = b.service.app.store.turns()
        assert (follow_up.question, follow_up.thread_id, follow_up.record["history"]) == (FOLLOW_UP, thread, "loaded")
        assert follow_up.conversation_id == asked.conversation_id


@pytest.mark.slow
def test_an_auto_answered_question_and_an_escalation_happen_once_across_workers(
        make_app: Callable[..., App], database_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A channel answered without a mention, its question delivered to both workers (Slack's retry
    reaching the other): one answer. "Ask a person" pressed by two people at once, one press on
    each worker: the experts are tagged once."""
    from adapters.slack.rendering import ESCALATE_ACTION
    from core.messages import Answering

    with slack_workers(make_app, database_url, monkeypatch, answer_in_channels=Answering.QUESTIONS,
                       experts=("UCAROL01",)) as (api, a, b):
        def post(server: Server, body: str, content_type: str = "application/json", **headers: str) -> None:
            r = httpx.post(server.url + "/slack/events", content=body, timeout=WAIT_S,
                           headers={"Content-Type": content_type, **sign(body, secret=SLACK_SECRET), **headers})
            assert r.status_code == 200

        def settle() -> None:
            for server in (a, b):  # every listener either worker started has finished
                server.service.slack.executor.shutdown(wait=True)

        question = json.loads(_slack_event(ANSWERED, "1700000000.000100", "Ev0AUTO01"))
        question["event"].update(type="message", channel_type="channel", text=ANSWERED)
        post(a, json.dumps(question))
        post(b, json.dumps(question), **{"X-Slack-Retry-Num": "1", "X-Slack-Retry-Reason": "http_timeout"})
        api.wait_until(lambda: api.requests("chat.postMessage"), what="the answer")
        post(a, _slack_event(OFF_TOPIC, "1700000000.000200", "Ev0AUTO02"))  # a mention, refused
        refusal = api.wait_until(lambda: [c for c in api.requests("chat.postMessage")
                                          if c.args.get("thread_ts") == "1700000000.000200"], what="the refusal")[0]
        [turn_id] = [e["value"] for b_ in refusal.args["blocks"] if b_["type"] == "actions"
                     for e in b_["elements"] if e["action_id"] == ESCALATE_ACTION]
        presses = [json.dumps({"type": "block_actions", "token": "legacy", "api_app_id": "A0GROUND",
                               "trigger_id": "1.2.3", "user": {"id": user, "team_id": TEAM}, "team": {"id": TEAM},
                               "channel": {"id": "C0GENERAL"}, "container": {"type": "message"},
                               "message": {"ts": refusal.result["ts"], "thread_ts": "1700000000.000200"},
                               "actions": [{"type": "button", "action_id": ESCALATE_ACTION, "value": turn_id,
                                            "block_id": "b", "action_ts": f"17.{i}"}]})
                   for i, user in enumerate(("UALICE01", "UBOB0001"))]
        threads = [threading.Thread(target=post, args=(server, _form(p), "application/x-www-form-urlencoded"))
                   for server, p in zip((a, b), presses, strict=True)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        settle()
        in_thread = [c for c in api.requests("chat.postMessage") if c.args.get("thread_ts") == "1700000000.000200"]
        assert len(in_thread) == 2 and "<@UCAROL01>" in in_thread[1].args["text"]  # the refusal, then one tagging
        answers = [c for c in api.requests("chat.postMessage") if c.args.get("thread_ts") == "1700000000.000100"]
        assert len(answers) == 1
        assert [t.question for t in a.service.app.store.turns()] == [ANSWERED, OFF_TOPIC]
        assert a.service.app.stats()["escalations"]["escalated"] == 1


def _form(payload: str) -> str:
    """An interactivity request's body: the payload as one form field."""
    from urllib.parse import urlencode

    return urlencode({"payload": payload})


# -- Telegram ------------------------------------------------------------------------------
async def _post_update(client: httpx.AsyncClient, server: Server, update: dict[str, Any],
                       secret: str = TG_SECRET) -> int:
    r = await client.post(server.url + "/telegram", json=update,
                          headers={"X-Telegram-Bot-Api-Secret-Token": secret})
    return r.status_code


@pytest.mark.slow
async def test_telegram_webhook_twice_delivered_update_and_reply_thread_across_workers(
        make_app: Callable[..., App], shared_db: str) -> None:
    standin = await TelegramStandIn().start()
    try:
        env = {"GROUNDBOT_TELEGRAM_TOKEN": standin.token, "GROUNDBOT_TELEGRAM_WEBHOOK_SECRET": TG_SECRET}
        cfg = config_with(env, telegram=replace(TelegramSettings(), base_url=standin.base_url,
                                                webhook_url="https://bot.example.org/telegram"))
        servers = [Server(worker(make_app, cfg, shared_db)), Server(worker(make_app, cfg, shared_db))]
        try:
            for s in servers:
                await asyncio.to_thread(s.wait_ready)
            a, b = servers
            [registered, _] = await standin.wait_for(lambda: len(standin.of("setWebhook")) >= 2 and standin.of("setWebhook"))
            assert registered.params["url"] == "https://bot.example.org/telegram"
            assert registered.params["secret_token"] == TG_SECRET
            async with httpx.AsyncClient(timeout=WAIT_S) as client:
                update = {"update_id": 9001, **standin.message_update(ANSWERED, chat_id=-100, chat_type="group",
                                                                      reply_to={"message_id": 1, "date": 0,
                                                                                "chat": standin.chat(-100, "group"),
                                                                                "from": standin.bot_user(),
                                                                                "text": "hi"})}
                assert await _post_update(client, a, update, secret="wrong") == 403
                assert await _post_update(client, a, update) == 200
                assert await _post_update(client, b, update) == 200  # Telegram delivered it again, to worker B
                [answer] = await standin.wait_sent(1, chat_id=-100)
                # the user replies to the bot's answer; worker B must find the thread worker A started.
                # A records the answer's message in the shared thread map right after sending it: a
                # person cannot reply before that, the test can, so it waits for the row
                reply_to = answer.result
                threads = ReplyThreads(a.service.app.store.engine)
                key = f"telegram:-100:{reply_to['message_id']}"
                deadline = time.monotonic() + WAIT_S
                while threads.thread_of(key) is None:
                    assert time.monotonic() < deadline, "worker A never recorded its answer in the thread map"
                    await asyncio.sleep(0.02)
                follow = {"update_id": 9002, **standin.message_update(FOLLOW_UP, chat_id=-100, chat_type="group",
                                                                      reply_to=reply_to)}
                assert await _post_update(client, b, follow) == 200
                await standin.wait_sent(2, chat_id=-100)
            for s in servers:  # stopping finishes everything either worker took on (lifespan shutdown)
                await asyncio.to_thread(s.stop)
            assert len(standin.sent(-100)) == 2
            turns = a.service.app.store.turns()
            assert len(turns) == 2 and turns[0].thread_id == turns[1].thread_id == "r1"
            assert turns[1].record["history"] == "loaded"
        finally:
            for s in servers:
                await asyncio.to_thread(s.stop)
    finally:
        await standin.stop()
