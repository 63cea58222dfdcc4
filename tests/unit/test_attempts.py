"""Wrong credentials limited per client and per route, the client behind a trusted proxy, and who
may read /metrics: the ASGI app of one worker asked in process (httpx's ASGI transport, the TCP
peer given), before its App is built, so the counts are the worker's own until its database is
open (the database rows and a real `groundbot serve`: tests/scenario/test_serve_access.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from bot.config import Config, load_config
from bot.server.attempts import LocalCounts
from bot.server.http_app import build_asgi
from bot.server.scope_access import AccessConfigError

API, METRICS = "api-token-0123456789", "metrics-token-9876543210"


def config(tmp_path: Path, serve: str = "", **environ: str) -> Config:
    path = tmp_path / "c.toml"
    path.write_text(f'[paths]\ndata_dir = "{(tmp_path / "data").as_posix()}"\n[serve]\n{serve}\n', encoding="utf-8")
    return load_config(path, environ=environ)


def _no_app() -> Any:
    raise AssertionError("no App is built in these tests (no lifespan runs)")


def client(cfg: Config | Any, peer: str) -> httpx.AsyncClient:
    """A client at `peer` of the worker `cfg` configures (or of the worker given, shared by clients)."""
    asgi = build_asgi(cfg, app_factory=_no_app) if isinstance(cfg, Config) else cfg
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=asgi, client=(peer, 40000)), base_url="http://gb")


async def ask(c: httpx.AsyncClient, token: str, **headers: str) -> httpx.Response:
    return await c.post("/api/ask", json={"question": "q"}, headers={"Authorization": f"Bearer {token}", **headers})


def test_local_counts_lock_at_the_limit_for_one_window_then_count_again() -> None:
    now = [0.0]
    counts = LocalCounts(clock=lambda: now[0])
    limits = {"client:a": 3, "route:api_ask": 0}
    assert [counts.fail(limits, 60.0) for _ in range(3)] == [[], [], ["client:a"]]  # 0: never locks
    assert counts.locked_s(["client:a"], 60.0) == 60.0 and counts.locked_s(["client:b"], 60.0) == 0.0
    now[0] = 59.5
    assert counts.locked_s(["client:a", "route:api_ask"], 60.0) == pytest.approx(0.5)
    now[0] = 60.5
    assert counts.locked_s(["client:a"], 60.0) == 0.0
    assert counts.fail(limits, 60.0) == []  # the failures before the lock are out of the window


async def test_a_client_is_refused_with_429_after_the_limit_and_another_is_served(tmp_path: Path) -> None:
    worker = build_asgi(config(tmp_path, "wrong_credentials_per_client = 3", GROUNDBOT_API_TOKEN=API), app_factory=_no_app)
    async with client(worker, "203.0.113.7") as guesser:
        statuses = [(await ask(guesser, f"guess-{i}")).status_code for i in range(5)]
        assert statuses == [401, 401, 401, 429, 429]
        locked = await ask(guesser, API)  # the right token too: a 200 would tell the guess was right
        assert locked.status_code == 429 and 1 <= int(locked.headers["retry-after"]) <= 60
        assert locked.json() == {"error": "too many wrong credentials; try again later"}
        assert (await guesser.get("/healthz")).status_code == 200
        # no credential is no guess: the open routes and a tokenless ask are as before
        assert (await guesser.post("/api/ask", json={"question": "q"})).status_code == 401
    async with client(worker, "198.51.100.4") as other:
        assert (await ask(other, API)).status_code == 503  # past the door: the App is still starting


async def test_a_forwarded_for_header_names_the_client_only_from_a_trusted_proxy(tmp_path: Path) -> None:
    worker = build_asgi(config(tmp_path, 'wrong_credentials_per_client = 2\ntrusted_proxies = ["10.0.0.2", "10.1.0.0/16"]',
                            GROUNDBOT_API_TOKEN=API), app_factory=_no_app)
    async with client(worker, "10.1.4.4") as proxy:  # a trusted network
        for _ in range(2):
            await ask(proxy, "guess", **{"X-Forwarded-For": "203.0.113.7"})
        assert (await ask(proxy, API, **{"X-Forwarded-For": "203.0.113.7"})).status_code == 429
        assert (await ask(proxy, API, **{"X-Forwarded-For": "198.51.100.4"})).status_code == 503  # another client
    async with client(worker, "192.0.2.50") as untrusted:  # a new address in each header changes nothing
        for n in range(2):
            await ask(untrusted, "guess", **{"X-Forwarded-For": f"203.0.113.{n}"})
        assert (await ask(untrusted, API, **{"X-Forwarded-For": "203.0.113.99"})).status_code == 429


async def test_a_route_past_its_total_refuses_every_credential_there_only(tmp_path: Path) -> None:
    worker = build_asgi(config(tmp_path, "wrong_credentials_total = 3", GROUNDBOT_API_TOKEN=API,
                            GROUNDBOT_METRICS_TOKEN=METRICS), app_factory=_no_app)
    for n in range(3):
        async with client(worker, f"203.0.113.{n}") as c:
            await ask(c, "guess")
    async with client(worker, "198.51.100.4") as c:
        assert (await ask(c, API)).status_code == 429
        assert (await c.get("/metrics", headers={"Authorization": f"Bearer {METRICS}"})).status_code == 200


@pytest.mark.parametrize(("peer", "headers", "status"), [
    ("127.0.0.1", {}, 200), ("::1", {}, 200), ("10.0.0.5", {}, 403),
    ("127.0.0.1", {"X-Forwarded-For": "203.0.113.7"}, 403),  # a local proxy forwarding someone else
    ("127.0.0.1", {"Forwarded": "for=203.0.113.7"}, 403)])
async def test_with_an_api_token_and_no_metrics_token_metrics_answers_loopback_only(
        tmp_path: Path, peer: str, headers: dict[str, str], status: int) -> None:
    async with client(config(tmp_path, GROUNDBOT_API_TOKEN=API), peer) as c:
        r = await c.get("/metrics", headers=headers)
        assert r.status_code == status, r.text
        assert status == 200 or "loopback" in r.json()["error"]


async def test_metrics_asks_for_its_own_token_when_one_is_set(tmp_path: Path) -> None:
    async with client(config(tmp_path, GROUNDBOT_API_TOKEN=API, GROUNDBOT_METRICS_TOKEN=METRICS), "10.0.0.5") as c:
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": f"Bearer {API}"},
                        {"Authorization": METRICS}):
            r = await c.get("/metrics", headers=headers)
            assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer", headers
        r = await c.get("/metrics", headers={"Authorization": f"Bearer {METRICS}"})
        assert r.status_code == 200 and "groundbot_access_refused_total" in r.text
    async with client(config(tmp_path), "10.0.0.5") as c:  # no token anywhere: open, as the API is
        assert (await c.get("/metrics")).status_code == 200


def test_a_metrics_token_that_is_an_api_or_review_token_stops_the_start(tmp_path: Path) -> None:
    for env in ({"GROUNDBOT_API_TOKEN": API, "GROUNDBOT_METRICS_TOKEN": API},
                {"GROUNDBOT_REVIEW_TOKEN": METRICS, "GROUNDBOT_METRICS_TOKEN": METRICS}):
        with pytest.raises(AccessConfigError, match="GROUNDBOT_METRICS_TOKEN holds an /api/ask or /review token"):
            build_asgi(config(tmp_path, **env))


@pytest.mark.parametrize("value", ["proxy.internal", "10.0.0.1/8", "*"])
def test_trusted_proxies_are_addresses_or_networks(tmp_path: Path, value: str) -> None:
    with pytest.raises(ValueError, match=r"\[serve\] trusted_proxies .*not an IP address or network"):
        config(tmp_path, f'trusted_proxies = ["{value}"]')


def test_two_workers_count_one_clients_wrong_credentials_together(tmp_path: Path) -> None:
    from bot.server.attempts import Attempts
    from bot.settings import ServeSettings
    from storage.records.database import make_engine, migrate
    from storage.records.rate_events import RateEvents

    url = f"sqlite:///{(tmp_path / 'records.db').as_posix()}"
    migrate(make_engine(url))
    serve = ServeSettings(wrong_credentials_per_client=4, wrong_credentials_total=0)
    a, b = (Attempts(serve, lambda s=RateEvents(make_engine(url)): s) for _ in range(2))  # type: ignore[misc]
    for worker in (a, b, a):
        assert worker.locked("api_ask", "203.0.113.7") is None
        worker.wrong("api_ask", "203.0.113.7")
    b.wrong("review", "203.0.113.7")  # the fourth, at another route: the client is locked everywhere
    for worker in (a, b):
        refused = worker.locked("metrics", "203.0.113.7")
        assert refused is not None and refused.status == 429 and 59 <= refused.retry_after <= 60
        assert worker.locked("api_ask", "198.51.100.4") is None
    with make_engine(url).connect() as conn:  # the counts are the database's, not either worker's memory
        rows = conn.exec_driver_sql("SELECT subject, count(*) FROM rate_event GROUP BY subject").all()
    assert dict(rows) == {"fail:client:203.0.113.7": 4, "lock:client:203.0.113.7": 1, "fail:route:api_ask": 3,
                          "fail:route:review": 1}
