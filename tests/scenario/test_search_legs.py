"""The search legs on LanceDB's public async API: the async view of the chunk table follows
commits made through another handle (another worker) and a table made anew; the loop it runs
on is groundbot's own and is not entered from itself."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from storage.index.async_loop import AsyncLoop
from storage.index.chunk_index import LanceChunkIndex
from storage.ingestion.ingest import ingest
from tests.scenario.test_scale_index import SETTINGS, HashEmbedder


def _doc(kb: Path, name: str, topic: str) -> None:
    kb.mkdir(exist_ok=True)
    (kb / f"{name}.md").write_text(f"# {name}\n\n## About {topic}\n\nThe {topic} procedure is described here.\n")


def _sources(index: LanceChunkIndex, emb: HashEmbedder, text: str) -> set[str]:
    return {Path(h.source).name for h in index.search(text, emb.embed_queries([text])[0], 20)}


def test_a_reader_sees_another_handles_commit_on_its_next_search(tmp_path: Path) -> None:
    emb, kb, data = HashEmbedder(), tmp_path / "kb", tmp_path / "index"
    _doc(kb, "alpha", "calibration")
    writer = LanceChunkIndex(data, emb.dim, emb.name)
    ingest([kb], writer, emb, SETTINGS)
    reader = LanceChunkIndex(data, emb.dim, emb.name)
    assert _sources(reader, emb, "calibration procedure") == {"alpha.md"}
    _doc(kb, "beta", "decommissioning")
    ingest([kb], writer, emb, SETTINGS)
    assert "beta.md" in _sources(reader, emb, "decommissioning procedure")


def test_a_search_after_the_table_is_made_anew_reads_the_new_table(tmp_path: Path) -> None:
    emb, kb, data = HashEmbedder(), tmp_path / "kb", tmp_path / "index"
    _doc(kb, "alpha", "calibration")
    index = LanceChunkIndex(data, emb.dim, emb.name)
    ingest([kb], index, emb, SETTINGS)
    assert _sources(index, emb, "calibration") == {"alpha.md"}
    index.db.drop_table("chunks")
    index.chunks._chunks = None
    (kb / "alpha.md").unlink()
    _doc(kb, "gamma", "inventory")
    ingest([kb], index, emb, SETTINGS)
    assert _sources(index, emb, "inventory") == {"gamma.md"}


def test_the_loop_runs_coroutines_and_refuses_to_wait_on_itself() -> None:
    loop = AsyncLoop("test-loop")

    async def double(x: int) -> int:
        await asyncio.sleep(0)
        return 2 * x

    assert loop.run(double(21)) == 42

    async def nested() -> int:
        return loop.run(double(1))

    with pytest.raises(RuntimeError, match="its own loop"):
        loop.run(nested())


def test_the_word_lookup_finds_words_the_sources_use_in_code_dotted_names_and_headings(tmp_path: Path) -> None:
    """The ask gates look a question's words up in the whole index (core/gate/mentions.py): a word
    the sources hold only inside code, a dotted name or a heading, or in a document ingested later,
    is mentioned; a word they never use is not."""
    emb, kb, data = HashEmbedder(), tmp_path / "kb", tmp_path / "index"
    kb.mkdir()
    (kb / "clients.md").write_text("# Clients\n\n## Event hooks\n\nHooks run on every request.\n\n"
                                   "```python\nclient = httpx.AsyncClient(verify=None, event_hooks=hooks)\n```\n")
    index = LanceChunkIndex(data, emb.dim, emb.name)
    ingest([kb], index, emb, SETTINGS)
    asked = ["asyncclient", "none", "event", "event_hooks", "httpx", "verify", "zebra"]
    assert index.unmentioned(asked) == ["zebra"]
    (kb / "tls.md").write_text("# TLS\n\nThe SSL context comes from `ssl.create_default_context()`.\n")
    ingest([kb], index, emb, SETTINGS)
    assert index.unmentioned(["ssl", "create_default_context", "asyncclient", "zebra"]) == ["zebra"]
