"""Admin re-ingest from chat reads only inside kb_paths and paths.reingest_roots: /etc/hostname,
`..` escapes, symlinks out of the KB and missing paths are refused with a clear message on the
console, Telegram and Slack, and nothing is ingested; an allowed path still works."""

from __future__ import annotations

import shutil
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from adapters.slack import SlackAdapter
from bot.app import App, build_app
from bot.config import load_config
from bot.settings import TelegramSettings
from core.ports import PathNotAllowed
from tests.scenario.test_console import run_console
from tests.scenario.test_slack import ADMIN, BOT_TOKEN, Slack
from tests.scenario.test_slack import SECRET as SLACK_SIGNING
from tests.scenario.test_telegram import running
from tests.standins.slack import SlackStandIn
from tests.standins.telegram import TelegramStandIn
from tests.waits import wait_until

ROOT = Path(__file__).resolve().parents[2]
TG_ADMIN = 111
OUTSIDE_MSG = "is outside the folders admins may re-ingest from chat"


@dataclass
class Kb:
    """A KB root with one new document, symlinks pointing out of it, and a folder beside it."""

    root: Path
    extra: Path  # allowed by reingest_roots, outside kb_paths

    @property
    def refused(self) -> list[str]:
        return ["/etc/hostname", str(self.root / "etc" / "hostname"), str(self.root / "host.txt"),
                f"{self.root}/../outside/notes.md", str(self.root / "missing.md")]


@pytest.fixture
def kb(tmp_path: Path) -> Kb:
    root = tmp_path / "kb"
    root.mkdir()
    (root / "lighthouse.md").write_text("# Lighthouses\n\n## What does a keeper log?\n\n"
                                        "Keepers log the lamp hours and the weather every night.\n")
    (root / "etc").symlink_to("/etc", target_is_directory=True)
    (root / "host.txt").symlink_to("/etc/hostname")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "notes.md").write_text("# Notes\n\nThe vault code is kept in the red binder on the top shelf.\n")
    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "parking.md").write_text("# Parking\n\n## Where can I park?\n\nIn the garage behind the library.\n")
    return Kb(root, extra)


def _reingest_app(make_app: Callable[..., App], kb: Kb, **fields: Any) -> App:
    return make_app(paths__kb_paths=(str(kb.root),), paths__reingest_roots=(str(kb.extra),), **fields)


def test_app_refuses_paths_outside_the_roots_before_reading(make_app: Callable[..., App], kb: Kb) -> None:
    app = _reingest_app(make_app, kb)
    before = (app.index.count(), app.index.version())
    for path in kb.refused:
        with pytest.raises(PathNotAllowed) as refused:
            app.kb.reingest([path])
        expected = "does not exist" if path.endswith("missing.md") else OUTSIDE_MSG
        assert expected in str(refused.value) and "nothing was ingested" in str(refused.value)
    # outside the roots, a missing path is answered like an existing one: chat learns nothing of /etc
    with pytest.raises(PathNotAllowed, match=OUTSIDE_MSG):
        app.kb.reingest(["/etc/no-such-file-here"])
    # one bad path refuses the whole request
    with pytest.raises(PathNotAllowed):
        app.kb.reingest([str(kb.root / "lighthouse.md"), "/etc/hostname"])
    assert (app.index.count(), app.index.version()) == before
    assert app.kb.reingest([str(kb.extra)]).added == ["extra/parking.md"]


def test_reingesting_the_kb_folder_skips_a_symlinked_file_that_leads_out(make_app: Callable[..., App], kb: Kb) -> None:
    """kb/host.txt -> /etc/hostname sits inside an allowed folder; re-ingesting the folder must
    not read it (folder walks never leave the folder)."""
    app = _reingest_app(make_app, kb)
    summary = app.kb.reingest([str(kb.root)])
    assert summary.added == ["kb/lighthouse.md"]
    hostname = Path("/etc/hostname").read_text().strip()
    if hostname:
        assert all(hostname not in h.text for h in app.index.search(hostname, app.embedder.embed_queries([hostname])[0], 5))


def test_operator_cli_ingest_is_not_restricted(make_app: Callable[..., App], kb: Kb, tmp_path: Path) -> None:
    """The operator at the shell owns the machine: App.ingest (groundbot ingest PATH) reads any path."""
    app = _reingest_app(make_app, kb)
    assert app.ingest([tmp_path / "outside"]).added == ["outside/notes.md"]


@pytest.mark.slow
def test_console_reingest_refuses_outside_paths(make_app: Callable[..., App], kb: Kb) -> None:
    app = _reingest_app(make_app, kb)
    before = (app.index.count(), app.index.version())
    out = run_console(app, [f"/reingest {p}" for p in kb.refused])
    assert out.count("Re-ingest refused: ") == len(kb.refused)
    assert "Re-ingest refused: /etc/hostname is outside the folders admins may re-ingest from chat" in out
    assert f"Re-ingest refused: {kb.root / 'missing.md'} does not exist" in out
    assert "Re-ingest done" not in out and "only admins" not in out
    assert (app.index.count(), app.index.version()) == before
    done = run_console(app, [f"/reingest {kb.root / 'lighthouse.md'}"])
    assert "Re-ingest done: added 1, updated 0, removed 0" in done
    assert app.index.count() > before[0]


# -- Telegram -------------------------------------------------------------------------------------
@pytest.fixture
async def tg_standin() -> AsyncIterator[TelegramStandIn]:
    server = await TelegramStandIn().start()
    yield server
    await server.stop()


@pytest.mark.slow
async def test_telegram_reingest_refuses_outside_paths(make_app: Callable[..., App], kb: Kb,
                                                       tg_standin: TelegramStandIn) -> None:
    app = _reingest_app(make_app, kb, environ={"GROUNDBOT_TELEGRAM_TOKEN": tg_standin.token},
                        telegram=replace(TelegramSettings(), base_url=tg_standin.base_url),
                        admins={"telegram": (str(TG_ADMIN),)})
    before = (app.index.count(), app.index.version())

    def finished() -> list[str]:
        return [e.params["text"] for e in tg_standin.of("editMessageText")
                if e.params["text"].startswith(("Re-ingest refused", "Re-ingest done", "Re-ingest failed"))]

    async with running(app):
        for n, path in enumerate(["/etc/hostname", str(kb.root / "etc" / "hostname")], start=1):
            tg_standin.send_text(f"/reingest {path}", chat_id=901, user_id=TG_ADMIN)
            await tg_standin.wait_for(lambda n=n: len(finished()) >= n)
        refusals = finished()
        assert (app.index.count(), app.index.version()) == before
        tg_standin.send_text(f"/reingest {kb.extra}", chat_id=901, user_id=TG_ADMIN)
        await tg_standin.wait_for(lambda: len(finished()) >= 3)
    assert refusals[0].startswith(f"Re-ingest refused: /etc/hostname {OUTSIDE_MSG}")
    assert refusals[1].startswith(f"Re-ingest refused: {kb.root / 'etc' / 'hostname'} {OUTSIDE_MSG}")
    assert "reingest_roots" in refusals[0]
    assert finished()[2].startswith("Re-ingest done: added 1, updated 0, removed 0")


# -- Slack ----------------------------------------------------------------------------------------
@pytest.fixture
def slack_api(monkeypatch: pytest.MonkeyPatch) -> Iterator[SlackStandIn]:
    for name in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy"):
        monkeypatch.delenv(name, raising=False)
    with SlackStandIn() as server:
        yield server


@pytest.mark.slow
def test_slack_reingest_refuses_outside_paths(slack_api: SlackStandIn, kb: Kb, tmp_path: Path, embedder: Any,
                                              docs_index: Path) -> None:
    shutil.copytree(docs_index, tmp_path / "data" / "index")
    cfg = load_config(ROOT / "config.toml", environ={"GROUNDBOT_SLACK_BOT_TOKEN": BOT_TOKEN})
    cfg = cfg.changed(paths__data_dir=tmp_path / "data", admins={**cfg.admins, "slack": (ADMIN,)},
                  paths__kb_paths=(str(kb.root),), paths__reingest_roots=(str(kb.extra),))
    app = build_app(cfg, embedder=embedder)
    adapter = SlackAdapter(app, bot_token=BOT_TOKEN, signing_secret=SLACK_SIGNING, api_base_url=slack_api.api_url,
                           progress_interval_s=0.0)
    http = adapter.http_server("127.0.0.1", 0)
    threading.Thread(target=http.serve_forever, daemon=True).start()
    bot = Slack("http", slack_api, app, adapter, http)
    before = (app.index.count(), app.index.version())

    def finished(count: int) -> list[str]:
        def texts() -> list[str]:
            return [u.args["text"] for u in slack_api.requests("chat.update") if u.args["text"].startswith("Re-ingest ")]

        return wait_until(lambda: len(done := texts()) >= count and done, 20, what=f"{count} finished re-ingests")

    try:
        bot.command("/groundbot-reingest", "/etc/hostname")
        finished(1)  # one at a time: the listener runs after the ack
        bot.command("/groundbot-reingest", str(kb.root / "host.txt"))
        refusals = finished(2)
        assert (app.index.count(), app.index.version()) == before
        bot.command("/groundbot-reingest", str(kb.root / "lighthouse.md"))
        done = finished(3)[2]
    finally:
        http.shutdown()
        adapter.close()
    assert refusals[0].startswith(f"Re-ingest refused: /etc/hostname {OUTSIDE_MSG}")
    assert refusals[1].startswith(f"Re-ingest refused: {kb.root / 'host.txt'} {OUTSIDE_MSG}")
    assert done.startswith("Re-ingest done: added 1")  # one command layer: the same words on every platform
