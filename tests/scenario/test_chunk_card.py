"""A hit's shown fields in one card column (storage/index/chunk_card.py), on LanceDB on disk: a card
keeps every field whatever its text, a table written in the old column layout is given its cards
in place (same hits, no re-embedding, later ingests work), and the full-text leg leaves
function words out."""

from __future__ import annotations

import json
import shutil
import warnings
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any

import lancedb
import pyarrow as pa
import pytest

from core.text.normalize import normalize_text
from storage.index.chunk_card import CARD, FIELDS, REPLACED, add_cards, pack, unpack
from storage.index.chunk_index import LanceChunkIndex
from storage.index.chunk_search import fts_terms
from storage.index.chunk_table import TABLE
from storage.ingestion.ingest import ingest
from tests.scenario.test_scale_index import SETTINGS as SCALE_SETTINGS
from tests.scenario.test_scale_index import HashEmbedder, write_docs

SETTINGS = replace(SCALE_SETTINGS, heading_keys=False)  # the old layout predates heading keys

HOSTILE = {"chunk_id": "c\x1f1", "doc_id": "kb/راهنما.md", "source": "/kb/راهنما.md", "title": "راهنما \U0001F600",
           "heading": "A > B\x1f", "url": "", "kind": "faq", "position": 7, "text": "line one\nline\ttwo \x00 end",
           "faq_question": "چطور؟ <script>", "faq_answer": "'; DROP TABLE chunks; --"}


def old_layout(dim: int) -> pa.Schema:
    """The chunk table's columns before cards: every shown field a column of its own."""
    strings = ("chunk_id", "doc_id", "source", "title", "heading", "url", "kind")
    return pa.schema([*(pa.field(c, pa.string()) for c in strings), pa.field("position", pa.int32()),
                      pa.field("text", pa.string()), pa.field("text_norm", pa.string()),
                      pa.field("faq_question", pa.string()), pa.field("faq_answer", pa.string()),
                      pa.field("doc_hash", pa.string()), pa.field("ingested_at", pa.string()),
                      pa.field("vector", pa.list_(pa.float32(), dim))])


def write_old_table(src: LanceChunkIndex, dest: Path, extra: Sequence[dict[str, Any]] = ()) -> None:
    """A copy of `src`'s chunks in the old layout at `dest` (with its full-text index and the
    index's metadata file), as an older groundbot left it."""
    rows = src.table().to_arrow().to_pylist()
    old = [unpack(r.pop(CARD)) | r for r in rows] + list(extra)
    db = lancedb.connect(dest)
    tbl = db.create_table(TABLE, data=pa.Table.from_pylist(old, schema=old_layout(src.dim)))
    with warnings.catch_warnings():  # the call an older groundbot made, deprecated alias and all
        warnings.simplefilter("ignore")
        tbl.create_fts_index("text_norm", stem=True, remove_stop_words=False, ascii_folding=True)
    shutil.copy(src.path / "groundbot-index.json", dest / "groundbot-index.json")


def test_a_card_gives_back_every_field_whatever_its_text() -> None:
    row = unpack(pack(HOSTILE))
    assert row == {**HOSTILE, "chunk_id": "c 1", "heading": "A > B "}  # only the separator itself is replaced
    assert set(row) == set(FIELDS) and unpack(pack({})) == {f: 0 if f == "position" else "" for f in FIELDS}


@pytest.fixture
def new_index(tmp_path: Path) -> tuple[LanceChunkIndex, HashEmbedder, Path]:
    kb = tmp_path / "kb"
    write_docs(kb, 12)
    emb = HashEmbedder()
    index = LanceChunkIndex(tmp_path / "new", emb.dim, emb.name)
    ingest([kb], index, emb, SETTINGS)
    return index, emb, kb


def test_a_table_in_the_old_layout_gets_its_cards_in_place(
        new_index: tuple[LanceChunkIndex, HashEmbedder, Path], tmp_path: Path) -> None:
    index, emb, kb = new_index
    hostile_vector = [0.0] * emb.dim
    write_old_table(index, tmp_path / "old", [HOSTILE | {"text_norm": "hostile", "doc_hash": "h", "ingested_at": "",
                                                        "vector": hostile_vector}])
    question = "How do I reset the device?"
    vector = emb.embed_queries([normalize_text(question)])[0]

    migrated = LanceChunkIndex(tmp_path / "old", emb.dim, emb.name)
    tbl = migrated.table()
    assert CARD in tbl.schema.names and not set(REPLACED) & set(tbl.schema.names)
    cards = {unpack(c)["chunk_id"]: c for c in tbl.to_arrow().column(CARD).to_pylist()}
    assert cards["c 1"] == pack(HOSTILE)  # the SQL that builds old tables' cards packs like pack()
    for r in index.table().to_arrow().to_pylist():
        assert cards[r["chunk_id"]] == r[CARD]
    assert [h.chunk_id for h in migrated.search(normalize_text(question), vector, 5)] == \
        [h.chunk_id for h in index.search(normalize_text(question), vector, 5)]
    faq = migrated.search(normalize_text(question), vector, 5)[0]
    assert faq.kind == "faq" and "ten seconds" in faq.text and faq.faq_question == question

    (kb / "doc0003.md").write_text("# Document 3\n\nThe device resets after a long press of twelve seconds.\n")
    emb.passages = 0
    summary = ingest([kb], migrated, emb, SETTINGS)  # a later ingest writes cards into the migrated table
    assert len(summary.updated) == 1 and emb.passages == summary.chunks_written <= 2, (summary, emb.passages)
    again = LanceChunkIndex(tmp_path / "old", emb.dim, emb.name)  # another process: no second migration
    texts = [h.text for h in again.search(normalize_text("long press twelve seconds"),
                                          emb.embed_queries([normalize_text("long press twelve seconds")])[0], 5)]
    assert any("twelve seconds" in t for t in texts), texts
    assert json.loads((tmp_path / "old" / "groundbot-index.json").read_text())["embedder"] == emb.name


def test_a_reader_of_the_old_layout_picks_up_the_cards_another_process_added(
        new_index: tuple[LanceChunkIndex, HashEmbedder, Path], tmp_path: Path) -> None:
    index, emb, _ = new_index
    write_old_table(index, tmp_path / "old")
    reader = LanceChunkIndex(tmp_path / "old", emb.dim, emb.name)
    reader.chunks.shown = list(FIELDS)  # as if its own migration had failed (a read-only store)
    reader.chunks._chunks = lancedb.connect(tmp_path / "old").open_table(TABLE)
    vector = emb.embed_queries(["topic"])[0]
    before = [h.chunk_id for h in reader.search("topic", vector, 5)]
    LanceChunkIndex(tmp_path / "old", emb.dim, emb.name).table()  # another process migrates
    reader.chunks._seen_stamp = None  # its next version check asks the store (a stat may sit in the same tick)
    assert [h.chunk_id for h in reader.search("topic", vector, 5)] == before and reader.chunks.shown == [CARD]


def test_the_full_text_leg_leaves_function_words_out_unless_nothing_else_is_left() -> None:
    assert fts_terms("What is the warranty period of the X200?") == ["warranty", "period", "x200"]
    assert fts_terms("What happened after the war, not before it?") == ["happened", "after", "war", "not", "before"]
    assert fts_terms("گارانتی این دستگاه چند سال است؟") == ["گارانتی", "این", "دستگاه", "چند", "سال", "است"]
    assert fts_terms("What is it?") == ["what", "is", "it"]
    assert fts_terms("") == []


def test_two_processes_opening_an_old_table_at_once_leave_one_card_column(
        new_index: tuple[LanceChunkIndex, HashEmbedder, Path], tmp_path: Path) -> None:
    index, emb, _ = new_index
    write_old_table(index, tmp_path / "old")
    tables = [lancedb.connect(tmp_path / "old").open_table(TABLE) for _ in range(2)]
    with ThreadPoolExecutor(2) as pool:
        assert list(pool.map(add_cards, tables)) == [True, True]
    names = lancedb.connect(tmp_path / "old").open_table(TABLE).schema.names
    assert names.count(CARD) == 1 and not set(REPLACED) & set(names), names
    vector = emb.embed_queries(["topic"])[0]
    assert [h.chunk_id for h in LanceChunkIndex(tmp_path / "old", emb.dim, emb.name).search("topic", vector, 5)] == \
        [h.chunk_id for h in index.search("topic", vector, 5)]
