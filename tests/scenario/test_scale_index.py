"""The chunk index as it grows, on LanceDB on disk: an ANN index trained once the table is large
enough, extended (not retrained) by later ingests, retrained past the drift share; unchanged
chunks keep their vectors; suggestions come from their own table.

The embedder is a deterministic stand-in (a vector seeded by the text's hash) so a table of a
few thousand chunks is written in seconds; everything else is the real ingest and LanceDB."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from storage.index.ann import VECTOR_INDEX, SearchIndexSettings
from storage.index.chunk_index import LanceChunkIndex
from storage.index.suggestion_index import TABLE as SUGGESTIONS
from storage.ingestion.ingest import ingest
from storage.settings import ChunkSettings


class HashEmbedder:
    """Unit vectors seeded by the text; counts what it embeds."""

    name = "hash"
    dim = 32

    def __init__(self) -> None:
        self.passages = 0

    def _vec(self, text: str) -> np.ndarray:
        seed = int.from_bytes(hashlib.sha1(text.encode()).digest()[:8], "little")
        v = np.random.default_rng(seed).standard_normal(self.dim).astype(np.float32)
        return v / np.linalg.norm(v)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return np.stack([self._vec(t) for t in texts]) if texts else np.zeros((0, self.dim), np.float32)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        self.passages += len(texts)
        return self.embed_queries(texts)


def write_docs(kb: Path, n: int, paragraphs: int = 6, tag: str = "") -> None:
    kb.mkdir(exist_ok=True)
    for d in range(n):
        body = "\n\n".join(f"Paragraph {p} of document {d}{tag} talks about topic {d * 7 + p} in some detail."
                           for p in range(paragraphs))
        (kb / f"doc{d:04d}.md").write_text(f"# Document {d}\n\n## Section about topic {d}\n\n{body}\n")
    (kb / "faq.csv").write_text("question,answer\nHow do I reset the device?,Hold the button for ten seconds.\n")


SETTINGS = ChunkSettings(chunk_chars=120, overlap_chars=0, min_chunk_chars=10)


@pytest.fixture
def built(tmp_path: Path) -> tuple[LanceChunkIndex, HashEmbedder, Path]:
    kb = tmp_path / "kb"
    write_docs(kb, 120)
    emb = HashEmbedder()
    index = LanceChunkIndex(tmp_path / "index", emb.dim, emb.name,
                            search=SearchIndexSettings(ann_min_rows=500, retrain_share=0.25, min_nprobes=4))
    summary = ingest([kb], index, emb, SETTINGS)
    assert index.count() >= 700 and "trained" in summary.index_maintenance["chunks"]
    return index, emb, kb


def test_an_ingest_of_a_few_changed_documents_extends_the_ann_index(built: tuple[LanceChunkIndex, HashEmbedder, Path]) -> None:
    index, emb, kb = built
    plan, _ = index.upkeep.ann_state(index.table())
    text = (kb / "doc0003.md").read_text()
    (kb / "doc0003.md").write_text(text.replace("Paragraph 5 of document 3", "Paragraph 5, rewritten, of document 3"))
    (kb / "doc9999.md").write_text("# New\n\nA brand new document about the spare parts catalogue.\n")
    emb.passages = 0
    summary = ingest([kb], index, emb, SETTINGS)
    assert summary.updated == ["kb/doc0003.md"] and summary.added == ["kb/doc9999.md"]
    assert summary.index_maintenance["chunks"] == "extended"
    assert emb.passages == 2 and summary.vectors_reused >= 5  # only the changed and new chunks were embedded
    stats = index.table().index_stats(VECTOR_INDEX)
    assert stats.num_unindexed_rows == 0 and stats.num_indexed_rows == index.count()
    assert index.upkeep.ann_state(index.table())[0] == plan  # same trained index, extended
    new = index.table().search().where("doc_id = 'kb/doc9999.md'").select(["vector"]).limit(1).to_arrow().to_pylist()
    hits = index.search("spare parts catalogue", np.asarray(new[0]["vector"], dtype=np.float32), 3)
    assert hits[0].doc_id == "kb/doc9999.md" and hits[0].keyword_rank == 1  # found by both legs


def test_past_the_drift_share_the_ann_index_is_retrained(built: tuple[LanceChunkIndex, HashEmbedder, Path]) -> None:
    index, emb, kb = built
    write_docs(kb, 120, tag=" (second edition)")  # every document changes
    summary = ingest([kb], index, emb, SETTINGS)
    assert "trained" in summary.index_maintenance["chunks"]
    assert index.upkeep.ann_state(index.table())[1] == 0


def test_ann_search_finds_what_exact_search_finds(built: tuple[LanceChunkIndex, HashEmbedder, Path]) -> None:
    index, _, _ = built
    tbl = index.table()
    sample = tbl.search().select(["chunk_id", "vector"]).limit(40).to_arrow().to_pylist()
    found = 0
    for row in sample:
        hits = index.search("zzz", np.asarray(row["vector"], dtype=np.float32), 5)
        found += bool(hits) and hits[0].chunk_id == row["chunk_id"] and abs(hits[0].similarity - 1.0) < 1e-4
    assert found >= 38  # re-ranked on stored vectors, a stored vector finds itself


def test_suggestions_come_from_their_own_table(built: tuple[LanceChunkIndex, HashEmbedder, Path]) -> None:
    index, emb, kb = built
    rows = index.db.open_table(SUGGESTIONS).to_arrow().to_pylist()
    texts = {r["text"] for r in rows}
    assert "How do I reset the device?" in texts and "Section about topic 7" in texts
    q = emb.embed_queries(["section about topic 7"])[0]
    cands = index.suggestion_candidates(q, 5)
    assert len(cands) == 5 and cands[0][0] == "Section about topic 7"
    (kb / "doc0007.md").unlink()
    ingest([kb], index, emb, SETTINGS)
    assert "Section about topic 7" not in {t for t, _ in index.suggestion_candidates(q, 50)}


def test_an_index_written_before_the_suggestion_table_gets_one_on_the_next_ingest(
        built: tuple[LanceChunkIndex, HashEmbedder, Path]) -> None:
    index, emb, kb = built
    index.db.drop_table(SUGGESTIONS)
    index.suggestions._rows = None
    summary = ingest([kb], index, emb, SETTINGS)
    assert summary.chunks_written == 0 and not summary.updated
    texts = {r["text"] for r in index.db.open_table(SUGGESTIONS).to_arrow().to_pylist()}
    assert "How do I reset the device?" in texts and "Section about topic 100" in texts


def test_both_legs_are_timed_and_a_write_by_another_process_is_seen(built: tuple[LanceChunkIndex, HashEmbedder, Path]) -> None:
    """The legs run together in one call to LanceDB, each timed; the cached table version gives
    way when another process (here another index object on the same folder) commits."""
    index, emb, kb = built
    before = index.version()
    seen: list[tuple[float, float]] = []
    index.observe_legs(lambda vector_ms, text_ms: seen.append((vector_ms, text_ms)))
    index.search("topic 21", emb.embed_queries(["topic 21"])[0], 3)
    index.observe_legs(None)
    index.search("topic 22", emb.embed_queries(["topic 22"])[0], 3)  # no observer: nothing told
    [(vector_ms, text_ms)] = seen
    assert vector_ms > 0 and text_ms > 0
    other = LanceChunkIndex(index.path, emb.dim, emb.name, search=index.settings)
    (kb / "doc9999.md").write_text("# New\n\nA brand new document about the spare parts catalogue.\n")
    ingest([kb], other, emb, SETTINGS)
    new = other.table().search().where("doc_id = 'kb/doc9999.md'").select(["vector"]).limit(1).to_arrow().to_pylist()
    hits = index.search("spare parts catalogue", np.asarray(new[0]["vector"], dtype=np.float32), 3)
    assert index.version() != before and hits[0].doc_id == "kb/doc9999.md" and hits[0].keyword_rank == 1
