"""Knowledge scopes over a real LanceDB index and a real App: each chat is answered from its
scope's documents only (a prefilter inside LanceDB), the record keeps the scope, and a chat no
scope serves is told so without anything being read. Telegram and Slack run the same rules
through their real libraries (test_scopes_telegram.py, test_scopes_slack.py)."""

from __future__ import annotations

import io
import json
import shutil
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import lancedb
import numpy as np
import pytest

from adapters.console import ConsoleChat, explain
from bot.app import App, build_app
from bot.cli.main import main as cli_main
from bot.config import load_config
from core import reasons
from core.messages import ConversationKey, Incoming
from core.text.normalize import normalize_text
from storage.index.async_loop import LANCE_LOOP
from storage.index.scope_column import scope_filter
from storage.index.search_legs import LegQuery, vector_query
from tests.scenario.scoped_kb import (
    ENG_CHANNEL,
    ENG_QUESTION,
    HR_CHANNEL,
    HR_OFF,
    HR_QUESTION,
    HR_WORDS,
    OTHER_CHANNEL,
    SHARED_QUESTION,
    scoped,
    write_kb,
)

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def scoped_index(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> tuple[Path, Path]:
    """(kb, index) of the two teams, ingested once with their scopes; copied per test."""
    root = tmp_path_factory.mktemp("scoped")
    kb = write_kb(root)
    cfg = scoped(load_config(ROOT / "config.toml", environ={}).changed(paths__data_dir=root / "data"), kb)
    summary = build_app(cfg, embedder=embedder).ingest()
    assert len(summary.added) == 3
    return kb, root / "data" / "index"


@pytest.fixture
def scoped_app(tmp_path: Path, embedder: Any, scoped_index: tuple[Path, Path]) -> Callable[..., App]:
    kb, index = scoped_index

    def factory(default: str = "", **fields: Any) -> App:
        data = tmp_path / f"data-{len(list(tmp_path.glob('data-*')))}"
        shutil.copytree(index, data / "index")
        cfg = scoped(load_config(ROOT / "config.toml", environ={}).changed(paths__data_dir=data), kb, default=default)
        return build_app(cfg.changed(**fields), embedder=embedder)

    return factory


def ask(app: App, text: str, channel: str, platform: str = "slack") -> Any:
    return app.ask(Incoming(ConversationKey(platform, channel), "U1", text))


def test_a_question_answered_in_hr_is_refused_in_engineering_though_the_text_is_in_the_index(
        scoped_app: Callable[..., App], embedder: Any) -> None:
    app = scoped_app()
    hr = ask(app, HR_QUESTION, HR_CHANNEL)
    assert not hr.refused and HR_WORDS in hr.answer and hr.scope == "hr"
    assert {s.doc_id.split("/")[-1] for s in hr.sources} == {"leave.md"}
    eng = ask(app, HR_QUESTION, ENG_CHANNEL)
    assert eng.refused and eng.scope == "eng" and eng.sources == []
    assert eng.refusal_message == "The engineering runbooks do not answer this; ask in #eng-help."
    assert all("parental" not in s.text.lower() for s in eng.suggestions)
    vec = embedder.embed_queries([normalize_text(HR_QUESTION)])[0]
    everything = app.index.search(normalize_text(HR_QUESTION), vec, 5)
    assert any(HR_WORDS in h.text for h in everything)  # in the index, outside eng's scope
    assert not any(HR_WORDS in h.text for h in app.index.search(normalize_text(HR_QUESTION), vec, 20, scope="eng"))
    # the shared FAQ answers in both scopes; each team's own documents only in its own
    assert not ask(app, SHARED_QUESTION, HR_CHANNEL).refused and not ask(app, SHARED_QUESTION, ENG_CHANNEL).refused
    assert not ask(app, ENG_QUESTION, ENG_CHANNEL).refused and ask(app, ENG_QUESTION, HR_CHANNEL).refused
    scopes = {(t.question, t.chat_id): t.scope for t in app.store.turns()}
    assert scopes[(HR_QUESTION, HR_CHANNEL)] == "hr" and scopes[(HR_QUESTION, ENG_CHANNEL)] == "eng"


def test_the_scope_is_a_prefilter_inside_lancedb(scoped_app: Callable[..., App], embedder: Any) -> None:
    """The vector leg's plan filters by the label-list index before the nearest rows are
    ranked (LanceDB's `full_filter` on the read, ScalarIndexQuery on scopes_idx)."""
    app = scoped_app()
    app.index.search("warm", np.full(embedder.dim, 0.05, dtype=np.float32), 1)
    vec = embedder.embed_queries([normalize_text(HR_QUESTION)])[0]
    q = LegQuery(vec, "", 10, ["card"], where=scope_filter("eng"))

    async def plan() -> str:
        atbl = await app.index.chunks.legs.at(int(app.index.version()))
        return str(await vector_query(atbl, q).explain_plan(True))

    text = LANCE_LOOP.run(plan())
    assert "full_filter=array_has_any(scopes" in text and "ScalarIndexQuery" in text and "scopes_idx" in text
    table = lancedb.connect(app.config.index_path).open_table("chunks")
    assert {i.name for i in table.list_indices()} >= {"scopes_idx"}
    assert lancedb.connect(app.config.index_path).open_table("suggestions").count_rows(scope_filter("eng")) > 0



def test_the_index_says_which_words_no_chunk_of_a_scope_mentions(scoped_app: Callable[..., App]) -> None:
    """By the full-text index's own matching (stems: "blocks" for "blocks", "employees" for
    "employee"), over the whole index or one scope's rows (core/gate/mentions.py asks it)."""
    app = scoped_app()
    assert app.index.unmentioned(["employees", "blocks", "dogs", "parental"]) == ["dogs"]
    assert app.index.unmentioned(["parental", "employee"], scope="eng") == ["parental", "employee"]
    assert app.index.unmentioned(["parental", "employee"], scope="hr") == []
    # a word of 7 letters or more spelt a letter apart from one the index holds is that word; a shorter one is not
    assert app.index.unmentioned(["harbeur", "sixtteen", "harber", "sixten"]) == ["harber", "sixten"]


def docs_in(index_path: Path, table: str) -> set[str]:
    rows = lancedb.connect(index_path).open_table(table).search().select(["doc_id"]).limit(None).to_arrow()
    return {d.split("/")[-1] for d in rows.column("doc_id").to_pylist()}


def test_each_scope_is_searched_in_a_table_of_its_own_holding_its_rows_only(
        scoped_app: Callable[..., App], embedder: Any) -> None:
    """A scoped search walks the scope's own table (no row mask on the chunk table): its rows are
    exactly the chunk table's rows of that scope, the shared FAQ in both."""
    app = scoped_app()
    assert app.index.scope_tables.names() == ["eng", "hr"] and app.index.scope_tables._legs == {}
    app.index.upkeep.warm()  # as a front end does when it starts: every scope's table opened before a question
    assert all(app.index.scope_tables._legs[s]._atbl is not None for s in ("eng", "hr"))
    assert docs_in(app.config.index_path, "chunks_in_hr") == {"leave.md", "faq.yaml"}
    assert docs_in(app.config.index_path, "chunks_in_eng") == {"runbook.md", "faq.yaml"}
    chunks = lancedb.connect(app.config.index_path).open_table("chunks")
    for scope in ("hr", "eng"):
        assert app.index.scope_tables.table(scope).count_rows() == chunks.count_rows(scope_filter(scope))
    vec = embedder.embed_queries([normalize_text(ENG_QUESTION)])[0]
    hits = app.index.search(normalize_text(ENG_QUESTION), vec, 5, scope="eng")
    assert hits and hits[0].doc_id.endswith("runbook.md")
    assert app.index.scope_tables._legs["eng"]._atbl is not None  # read through the scope's table
    unscoped = replace(app.config.search_index, scope_tables=False)
    plain = build_app(app.config.changed(search_index=unscoped), embedder=app.embedder)
    assert [h.chunk_id for h in plain.index.search(normalize_text(ENG_QUESTION), vec, 5, scope="eng")] == \
        [h.chunk_id for h in hits]  # the prefilter on the chunk table finds the same
    assert "eng" not in plain.index.scope_tables._legs


def test_scope_tables_follow_a_reingest_and_are_copied_again_when_they_drift(
        scoped_app: Callable[..., App], scoped_index: tuple[Path, Path]) -> None:
    kb, _ = scoped_index
    app = scoped_app()
    hr_only = replace(app.config.scopes[0], paths=(str(kb / "hr"),))  # the FAQ leaves hr
    moved = build_app(app.config.changed(scopes=(hr_only, app.config.scopes[1])), embedder=app.embedder)
    moved.ingest()
    assert docs_in(moved.config.index_path, "chunks_in_hr") == {"leave.md"}
    assert docs_in(moved.config.index_path, "chunks_in_eng") == {"runbook.md", "faq.yaml"}
    assert ask(moved, SHARED_QUESTION, HR_CHANNEL).refused and not ask(moved, SHARED_QUESTION, ENG_CHANNEL).refused
    # a scope table that lost rows (a crash between the two commits) is copied again by maintenance
    moved.index.scope_tables.table("eng").delete("doc_id LIKE '%runbook.md'")
    done = moved.index.upkeep.maintain()
    assert docs_in(moved.config.index_path, "chunks_in_eng") == {"runbook.md", "faq.yaml"} and "scope eng" in done
    # a scope taken out of config loses its table with the next ingest
    eng_only = build_app(moved.config.changed(scopes=(moved.config.scopes[1],)), embedder=app.embedder)
    assert "dropped" in eng_only.ingest().index_maintenance["scope hr"]
    assert eng_only.index.scope_tables.names() == ["eng"]



def test_a_scope_table_dropped_by_another_process_leaves_the_prefilter_to_answer(
        scoped_app: Callable[..., App]) -> None:
    app = scoped_app()
    assert not ask(app, ENG_QUESTION, ENG_CHANNEL).refused
    lancedb.connect(app.config.index_path).drop_table("chunks_in_eng")  # another process's config lost eng
    again = ask(app, ENG_QUESTION, ENG_CHANNEL)
    assert not again.refused and {s.doc_id.split("/")[-1] for s in again.sources} == {"runbook.md"}
    assert "eng" not in app.index.scope_tables._tables  # the lost table forgotten, the chunk table read
    assert ask(app, HR_QUESTION, ENG_CHANNEL).refused  # still eng's rows only
    assert app.index.scope_tables._absent["eng"] == int(app.index.version())  # not looked for again per search

def test_suggestions_offered_in_a_scope_come_from_it_and_are_answered_in_it(scoped_app: Callable[..., App]) -> None:
    app = scoped_app()
    app.check_suggestions()
    refused = ask(app, HR_OFF, HR_CHANNEL)
    offered = [s.text for s in refused.suggestions]
    assert refused.refused and offered
    eng_texts = set(app.index.suggestion_texts(100, scope="eng")) - set(app.index.suggestion_texts(100, scope="hr"))
    assert eng_texts and not set(offered) & eng_texts
    for s in refused.suggestions:
        picked = app.ask(Incoming(ConversationKey("slack", HR_CHANNEL), "U1", "", suggestion_id=s.id))
        assert not picked.refused and picked.scope == "hr", (s.text, picked.refusal_reason)


def test_a_chat_no_scope_serves_is_told_so_and_nothing_is_read(scoped_app: Callable[..., App]) -> None:
    app = scoped_app()
    searched: list[Any] = []
    search = app.index.search
    app.pipeline.index.search = lambda *a, **k: searched.append(a) or search(*a, **k)  # type: ignore[method-assign]
    d = ask(app, HR_QUESTION, OTHER_CHANNEL)
    assert d.refused and d.refusal_reason == reasons.CHAT_NOT_SET_UP and d.scope == "-"
    assert d.refusal_message.startswith("This chat is not set up") and d.suggestions == [] and searched == []
    defaulted = scoped_app(default="hr")
    d = ask(defaulted, HR_QUESTION, OTHER_CHANNEL)
    assert not d.refused and d.scope == "hr"


def test_why_shows_the_scope_and_console_scope_overrides_the_chat(scoped_app: Callable[..., App]) -> None:
    app = scoped_app()
    out = io.StringIO()
    chat = ConsoleChat(app, stdin=io.StringIO(f"{ENG_QUESTION}\n/why\n"), stdout=out, scope="eng")
    chat.run()
    assert chat.last is not None and not chat.last.refused and chat.last.scope == "eng"
    assert "scope: eng" in out.getvalue() and "scope: eng" in explain(chat.last)
    console = ConsoleChat(app, stdin=io.StringIO(f"{ENG_QUESTION}\n"), stdout=io.StringIO())  # "console" is hr's
    console.run()
    assert console.last is not None and console.last.refused and console.last.scope == "hr"


def test_stats_and_reingest_are_the_scope_of_the_chat(scoped_app: Callable[..., App],
                                                     scoped_index: tuple[Path, Path]) -> None:
    app = scoped_app(admins={"console": ("local",), "slack": ("UGLOBAL",), "telegram": ()})
    ask(app, HR_QUESTION, HR_CHANNEL)
    ask(app, ENG_QUESTION, ENG_CHANNEL)
    ask(app, HR_QUESTION, ENG_CHANNEL)
    assert app.stats("hr")["turns"] == 1 and app.stats("eng")["turns"] == 2 and app.stats()["turns"] == 3
    reply = app.command("slack", "UGLOBAL", "stats", chat_id=ENG_CHANNEL)
    assert reply.text.startswith("Scope: eng\nTurns: 2 (answered 1, refused 1)")
    assert app.command("slack", "UENGLEAD", "stats", chat_id=HR_CHANNEL).ok is False
    done = app.command("slack", "UGLOBAL", "reingest", chat_id=ENG_CHANNEL)
    assert done.text.startswith("Re-ingest of scope eng: added 0, updated 0, removed 0, unchanged 2 documents")


def test_changing_a_scope_rewrites_its_documents_scopes_with_their_vectors(
        scoped_app: Callable[..., App], scoped_index: tuple[Path, Path]) -> None:
    kb, _ = scoped_index
    app = scoped_app()
    eng = replace(app.config.scopes[1], paths=(str(kb / "eng"), str(kb / "shared"), str(kb / "hr")))
    moved = build_app(app.config.changed(scopes=(app.config.scopes[0], eng)), embedder=app.embedder)
    summary = moved.ingest()
    assert sorted(p.split("/")[-1] for p in summary.updated) == ["leave.md"] and summary.added == []
    assert summary.vectors_reused > 0 and summary.embed_seconds < 5
    assert not ask(moved, HR_QUESTION, ENG_CHANNEL).refused


def test_ask_with_an_unknown_scope_is_an_error_and_nothing_is_answered(
        scoped_app: Callable[..., App], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    app = scoped_app()
    cfg_file = tmp_path / "c.toml"
    kb = Path(app.config.paths.kb_paths[0])
    cfg_file.write_text(f'[paths]\nkb_paths = ["{kb}"]\ndata_dir = "{app.config.paths.data_dir}"\n\n'
                        f'[[scopes]]\nname = "hr"\npaths = ["{kb / "hr"}"]\nchats = ["cli"]\n', encoding="utf-8")
    assert cli_main(["--config", str(cfg_file), "ask", "--scope", "finance", HR_QUESTION]) == 2
    assert "unknown scope 'finance' (scopes: hr)" in capsys.readouterr().err
    assert app.store.turns() == []
    assert cli_main(["--config", str(cfg_file), "ask", "--json", "--scope", "hr", HR_QUESTION]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["scope"] == "hr" and not record["refused"]


def test_a_scope_admin_reviews_the_questions_asked_in_that_scope_only(scoped_app: Callable[..., App]) -> None:
    from tests.scenario.scoped_kb import ENG_ADMIN_SLACK, HR_ADMIN_SLACK

    app = scoped_app(admins={"console": ("local",), "slack": ("UGLOBAL",), "telegram": ()})
    hr, eng = ask(app, HR_QUESTION, HR_CHANNEL), ask(app, ENG_QUESTION, ENG_CHANNEL)
    assert hr.turn_id is not None and eng.turn_id is not None
    for turn in (hr.turn_id, eng.turn_id):
        assert app.feedback("U1", turn, -1, "wrong").ok
    everything = app.review("slack", "UGLOBAL", "list", None).text
    assert HR_QUESTION in everything and ENG_QUESTION in everything
    listing = app.review("slack", HR_ADMIN_SLACK, "list", None).text
    assert listing.startswith("1 item(s) waiting for review:") and HR_QUESTION in listing
    assert ENG_QUESTION not in listing
    items = {e.question: e.id for e in app.desk.queue.entries()}
    denied = app.review("slack", HR_ADMIN_SLACK, "approve", items[ENG_QUESTION])
    assert not denied.ok and denied.text == "Sorry, only admins can review questions asked in scope eng."
    assert app.desk.queue.entry(items[ENG_QUESTION]).status == "open"  # type: ignore[union-attr]
    assert app.review("slack", HR_ADMIN_SLACK, "approve", items[HR_QUESTION]).ok
    assert app.review("slack", ENG_ADMIN_SLACK, "approve", items[ENG_QUESTION]).ok
    assert not app.review("slack", "UNOBODY", "list", None).ok
