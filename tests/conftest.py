"""Shared fixtures: the real embedder (loaded once), a bundled-docs index built once and
copied per test, a `make_app` factory wiring a real App into a temporary data dir, and a free
port of 127.0.0.1."""

from __future__ import annotations

import gc
import shutil
import socket
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bot.app import App, build_app
from bot.config import Config, load_config
from tests import ports

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


def _freeze_heap() -> None:
    """Put every object alive now (imported libraries, the loaded model) out of the cyclic
    garbage collector's reach. Torch, transformers and LanceDB leave ~650k long-lived objects;
    every full collection walks them all, and pytest's closing collections plus the interpreter's
    shutdown do several: on a loaded 2-core machine pytest stayed busy for tens of seconds after
    its summary. Objects made later (by the tests) are collected as usual."""
    gc.collect()
    gc.freeze()


def pytest_collection_finish(session: pytest.Session) -> None:
    _freeze_heap()


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects by marker
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test on the real PostgreSQL server is marked `postgres` wherever the server comes from:
    its fixture asked for by name, or the `database_url` fixture's PostgreSQL variant."""
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        if "postgres_server" in getattr(item, "fixturenames", ()) or params.get("database_url") == "postgresql":
            item.add_marker(pytest.mark.postgres)


@pytest.fixture(autouse=True)
def _no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests must not leave the machine: any connection beyond loopback fails loudly."""
    real_connect = socket.socket.connect

    def guarded(self: socket.socket, address: Any) -> Any:
        host = address[0] if isinstance(address, tuple) else address
        if isinstance(host, str) and not (host.startswith("127.") or host in ("localhost", "::1") or host.startswith("/")):
            raise RuntimeError(f"test tried to reach the network: {address!r}")
        return real_connect(self, address)

    monkeypatch.setattr(socket.socket, "connect", guarded)


@pytest.fixture
def free_port() -> int:
    """A free port of 127.0.0.1 for one server of the test, or one that nothing listens on
    (tests/ports.py)."""
    return ports.free_port()


@pytest.fixture(scope="session")
def embedder() -> Any:
    from models.embedders import MiniLMEmbedder

    embedder = MiniLMEmbedder()
    _freeze_heap()  # the model and what loading it imported live for the whole session
    return embedder


@pytest.fixture(scope="session")
def docs_index(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> Path:
    """A data dir whose index holds the bundled docs, built once per session."""
    data = tmp_path_factory.mktemp("docs-index")
    cfg = load_config(ROOT / "config.toml", environ={}).changed(paths__data_dir=data)
    app = build_app(cfg, embedder=embedder)
    summary = app.ingest([DOCS])
    assert summary.chunks_written > 0
    return data / "index"


@pytest.fixture
def base_config() -> Config:
    """The shipped config.toml with no secrets, to derive test configs from."""
    return load_config(ROOT / "config.toml", environ={})


@pytest.fixture
def make_app(tmp_path: Path, embedder: Any, docs_index: Path) -> Callable[..., App]:
    """Build a real App in a fresh data dir holding a copy of the bundled-docs index.

    Keyword arguments: `config` (a Config to start from), `generator`, `admins`
    (dict platform -> ids), `environ` (secrets), plus any Config field.
    """

    def factory(*, config: Config | None = None, generator: Any = None, environ: dict[str, str] | None = None,
                empty: bool = False, **fields: Any) -> App:
        data = Path(tempfile.mkdtemp(prefix="data-", dir=tmp_path))  # unique even when workers build apps at once
        if not empty:
            shutil.copytree(docs_index, data / "index")
        cfg = config or load_config(ROOT / "config.toml", environ=environ or {})
        cfg = cfg.changed(paths__data_dir=data, **fields)
        return build_app(cfg, embedder=embedder, generator=generator)

    return factory


@pytest.fixture(scope="session")
def postgres_server() -> Any:
    """A real PostgreSQL server on 127.0.0.1 for the whole session (tests/postgres.py).

    Missing server binaries skip the PostgreSQL variants loudly on a developer machine and fail
    them in CI, where scripts/test.sh installs Debian's `postgresql` package first."""
    import os

    from tests.postgres import PostgresServer, server_binaries

    in_ci = bool(os.environ.get("CI"))
    bindir = server_binaries()
    if bindir is None:
        message = ("PostgreSQL server binaries not found: the PostgreSQL variants of the transcript tests did NOT "
                   "run (scripts/test.sh installs Debian's postgresql package when run as root)")
        if in_ci:
            pytest.fail(message)
        pytest.skip(message)
    try:
        server = PostgresServer(bindir).start()
    except Exception as exc:
        message = f"PostgreSQL server could not start, its tests did NOT run: {exc}"
        if in_ci:
            pytest.fail(message)
        pytest.skip(message)
    yield server
    server.stop()


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh transcript database: a SQLite file, then a database on the real PostgreSQL server."""
    if request.param == "sqlite":
        return f"sqlite:///{(tmp_path / 'transcripts.db').as_posix()}"
    return str(request.getfixturevalue("postgres_server").url())
