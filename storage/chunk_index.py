"""The LanceDB chunk index: one table, a native full-text index, hybrid search.

Writes land in one `merge_insert` commit, so a reader (or a crash) never sees
half an ingest: LanceDB keeps the previous version until the new one commits.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
import warnings
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import lancedb
import numpy as np
import pyarrow as pa

from core.messages import Hit
from core.normalize import normalize_text
from storage.documents import Chunk

log = logging.getLogger(__name__)
TABLE = "chunks"
_FTS_SAFE = re.compile(r"[^\w\s]", re.UNICODE)
_COLUMNS = ["chunk_id", "doc_id", "source", "title", "heading", "url", "kind", "position", "text",
            "faq_question", "faq_answer"]


def schema(dim: int) -> pa.Schema:
    return pa.schema(
        [
            pa.field("chunk_id", pa.string()),
            pa.field("doc_id", pa.string()),
            pa.field("source", pa.string()),
            pa.field("title", pa.string()),
            pa.field("heading", pa.string()),
            pa.field("url", pa.string()),
            pa.field("kind", pa.string()),
            pa.field("position", pa.int32()),
            pa.field("text", pa.string()),
            pa.field("text_norm", pa.string()),
            pa.field("faq_question", pa.string()),
            pa.field("faq_answer", pa.string()),
            pa.field("doc_hash", pa.string()),
            pa.field("ingested_at", pa.string()),
            pa.field("vector", pa.list_(pa.float32(), dim)),
        ]
    )


class LanceChunkIndex:
    """ChunkIndex port over a LanceDB table on disk."""

    def __init__(self, path: Path, dim: int, embedder_name: str, candidates: int = 20, rrf_k: int = 60) -> None:
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        self.dim = dim
        self.embedder_name = embedder_name
        self.candidates = candidates
        self.rrf_k = rrf_k
        self.db = lancedb.connect(str(self.path))
        self._table: Any = None
        self._suggest_cache: tuple[str, list[tuple[str, np.ndarray]]] | None = None
        self._heading_embedder: Any = None
        self._check_meta()

    # -- metadata ---------------------------------------------------------------
    def _meta_path(self) -> Path:
        return self.path / "groundbot-index.json"

    def _check_meta(self) -> None:
        meta = self._meta_path()
        if meta.exists():
            data = json.loads(meta.read_text())
            if data.get("embedder") != self.embedder_name or data.get("dim") != self.dim:
                raise RuntimeError(
                    f"index at {self.path} was built with embedder {data.get('embedder')!r}; "
                    f"config asks for {self.embedder_name!r}. Re-ingest into a fresh data dir."
                )

    def _write_meta(self) -> None:
        self._meta_path().write_text(json.dumps({"embedder": self.embedder_name, "dim": self.dim}))

    def table(self) -> Any:
        """The chunks table, or None before the first ingest."""
        if self._table is None:
            try:
                self._table = self.db.open_table(TABLE)
            except (FileNotFoundError, ValueError):
                return None
        return self._table

    def version(self) -> str:
        tbl = self.table()
        if tbl is None:
            return "empty"
        with contextlib.suppress(Exception):  # see writes made by other processes
            tbl.checkout_latest()
        return str(tbl.version)

    def count(self) -> int:
        tbl = self.table()
        return 0 if tbl is None else int(tbl.count_rows())

    # -- reading ----------------------------------------------------------------
    def existing_docs(self) -> dict[str, tuple[str, str]]:
        """doc_id -> (source path, content hash) of what the index holds now."""
        tbl = self.table()
        if tbl is None:
            return {}
        rows = tbl.search().select(["doc_id", "source", "doc_hash"]).limit(None).to_arrow().to_pylist()
        return {r["doc_id"]: (r["source"], r["doc_hash"]) for r in rows}

    def search(self, query_text: str, query_vector: np.ndarray, k: int) -> list[Hit]:
        """Vector and full-text results fused by reciprocal rank; scores stay cosine."""
        tbl = self.table()
        if tbl is None:
            return []
        qv = np.asarray(query_vector, dtype=np.float32)
        cols = [*_COLUMNS, "vector"]
        vec_rows = (
            tbl.search(qv, vector_column_name="vector").distance_type("cosine").limit(self.candidates)
            .select([*cols, "_distance"]).to_arrow().to_pylist()
        )
        fts_rows: list[dict[str, Any]] = []
        terms = _FTS_SAFE.sub(" ", normalize_text(query_text)).split()
        if terms:
            try:
                fts_rows = (
                    tbl.search(" ".join(terms), query_type="fts", fts_columns="text_norm")
                    .limit(self.candidates).select([*cols, "_score"]).to_arrow().to_pylist()
                )
            except Exception as exc:  # no FTS index yet, or a query the parser rejects
                log.debug("full-text search skipped: %s", exc)
        return self._fuse(vec_rows, fts_rows, qv, k)

    def _fuse(self, vec_rows: list[dict[str, Any]], fts_rows: list[dict[str, Any]], qv: np.ndarray, k: int) -> list[Hit]:
        fused: dict[tuple[str, int], dict[str, Any]] = {}
        for source_rank, rows in (("v", vec_rows), ("f", fts_rows)):
            seen: set[tuple[str, int]] = set()
            rank = -1
            for row in rows:
                key = (row["doc_id"], int(row["position"]))
                sim = float(np.dot(np.asarray(row["vector"], dtype=np.float32), qv))
                entry = fused.setdefault(key, {"row": row, "sim": sim, "fused": 0.0, "kw": None})
                entry["sim"] = max(entry["sim"], sim)
                if row["kind"] == "faq_qa":  # an FAQ shows its question + answer row
                    entry["row"] = row
                if key in seen:  # an FAQ's question row and answer row count once per ranking
                    continue
                seen.add(key)
                rank += 1
                entry["fused"] += 1.0 / (self.rrf_k + rank + 1)
                if source_rank == "f" and entry["kw"] is None:
                    entry["kw"] = rank + 1
        ordered = sorted(fused.values(), key=lambda e: (-e["fused"], -e["sim"], e["row"]["chunk_id"]))[:k]
        hits = []
        for e in ordered:
            r = e["row"]
            faq = r["kind"] in ("faq", "faq_qa")
            text = f"{r['faq_question']}\n{r['faq_answer']}" if faq else r["text"]
            hits.append(
                Hit(
                    chunk_id=r["chunk_id"], doc_id=r["doc_id"], source=r["source"], title=r["title"],
                    heading=r["heading"], text=text, similarity=round(e["sim"], 6), fused=round(e["fused"], 6),
                    keyword_rank=e["kw"], kind="faq" if faq else "doc", faq_question=r["faq_question"],
                    faq_answer=r["faq_answer"], url=r["url"], position=int(r["position"]),
                )
            )
        return hits

    def set_heading_embedder(self, embedder: Any) -> None:
        """Headings are embedded lazily for suggestions, once per index version."""
        self._heading_embedder = embedder

    def suggestion_candidates(self) -> list[tuple[str, np.ndarray]]:
        """FAQ questions (stored vectors) and section headings (embedded once per version)."""
        tbl = self.table()
        if tbl is None:
            return []
        version = self.version()
        if self._suggest_cache and self._suggest_cache[0] == version:
            return self._suggest_cache[1]
        rows = tbl.search().select(["kind", "heading", "faq_question", "vector"]).limit(None).to_arrow().to_pylist()
        out: list[tuple[str, np.ndarray]] = []
        headings: list[str] = []
        seen: set[str] = set()
        for r in rows:
            if r["kind"] == "faq" and r["faq_question"] not in seen:
                seen.add(r["faq_question"])
                out.append((r["faq_question"], np.asarray(r["vector"], dtype=np.float32)))
            elif r["kind"] == "doc" and r["heading"]:
                leaf = r["heading"].split(" > ")[-1].strip()
                if leaf and leaf not in seen and len(leaf) > 3 and not leaf.startswith("page "):
                    seen.add(leaf)
                    headings.append(leaf)
        if headings and self._heading_embedder is not None:
            vecs = self._heading_embedder.embed_queries([normalize_text(h) for h in headings])
            out.extend(zip(headings, vecs, strict=True))
        self._suggest_cache = (version, out)
        return out

    # -- writing ----------------------------------------------------------------
    def apply(self, new_chunks: Sequence[Chunk], vectors: np.ndarray, doc_hashes: dict[str, str],
              replace_docs: Sequence[str]) -> None:
        """Insert `new_chunks` and drop every other chunk of `replace_docs`, in one commit."""
        now = datetime.now(UTC).isoformat(timespec="seconds")
        records = [
            {
                "chunk_id": c.chunk_id, "doc_id": c.doc_id, "source": c.source, "title": c.title,
                "heading": c.heading, "url": c.url, "kind": c.kind, "position": c.position, "text": c.text,
                "text_norm": normalize_text(" ".join(p for p in (c.title, c.heading, c.text) if p)),
                "faq_question": c.faq_question, "faq_answer": c.faq_answer, "doc_hash": doc_hashes[c.doc_id],
                "ingested_at": now, "vector": vectors[i].astype(np.float32).tolist(),
            }
            for i, c in enumerate(new_chunks)
        ]
        data = pa.Table.from_pylist(records, schema=schema(self.dim))
        tbl = self.table()
        if tbl is None:
            self._table = self.db.create_table(TABLE, data=data, schema=schema(self.dim))
        else:
            scope = ", ".join("'" + d.replace("'", "''") + "'" for d in sorted(set(replace_docs)))
            builder = tbl.merge_insert("chunk_id").when_matched_update_all().when_not_matched_insert_all()
            if scope:
                builder = builder.when_not_matched_by_source_delete(f"doc_id IN ({scope})")
            builder.execute(data)
        self._write_meta()
        self._suggest_cache = None

    def rebuild_text_index(self) -> None:
        """(Re)build the full-text index over normalised text after a write."""
        tbl = self.table()
        if tbl is None or tbl.count_rows() == 0:
            return
        with warnings.catch_warnings():  # the native (non-tantivy) index is what we want; the alias is deprecated
            warnings.simplefilter("ignore")
            tbl.create_fts_index("text_norm", replace=True, stem=True, remove_stop_words=False, ascii_folding=True)

    def ensure_vector_index(self, min_rows: int = 50_000) -> bool:
        """Build an ANN index once the table is large; brute force is faster below that."""
        tbl = self.table()
        if tbl is None or tbl.count_rows() < min_rows:
            return False
        tbl.create_index(metric="cosine", vector_column_name="vector", replace=True)
        return True
