"""The LanceDB chunk index: one table, a native full-text index, hybrid search.

Writes land in one `merge_insert` commit, so a reader (or a crash) never sees
half an ingest: LanceDB keeps the previous version until the new one commits.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import lancedb
import numpy as np
import pyarrow as pa

from core.messages import Hit
from core.text.lexicon import FTS_SKIP
from core.text.normalize import normalize_text
from storage.documents import Chunk
from storage.index.ann import AnnPlan, SearchIndexSettings, ann_state, ef_for, maintain_table, nprobes_for
from storage.index.chunk_card import CARD, FIELDS, add_cards, pack, unpack
from storage.index.fusion import fuse
from storage.index.index_meta import IndexMeta
from storage.index.scope_column import FIELD as SCOPES_FIELD
from storage.index.scope_column import SCOPES, add_scope_column, index_scopes, scope_filter
from storage.index.scope_tables import ScopeTables, doc_list, scopes_of_docs, text_index
from storage.index.search_legs import AsyncTableAt, LegQuery, LegTimes, run_legs, word_queries
from storage.index.suggestion_index import SuggestionRow, SuggestionTable, heading_leaf, open_table_or_none, vectors_of

log = logging.getLogger(__name__)
TABLE = "chunks"
_FTS_SAFE = re.compile(r"[^\w\s]", re.UNICODE)


def schema(dim: int) -> pa.Schema:
    """The chunk table: what searches and ingests filter on as columns, what a hit shows in its
    card (storage/index/chunk_card.py). A table migrated from the old layout has the same columns."""
    return pa.schema(
        [
            pa.field("chunk_id", pa.string()),
            pa.field("doc_id", pa.string()),
            pa.field("source", pa.string()),
            pa.field("kind", pa.string()),
            pa.field("position", pa.int32()),
            pa.field("text_norm", pa.string()),
            pa.field("doc_hash", pa.string()),
            pa.field("ingested_at", pa.string()),
            pa.field("vector", pa.list_(pa.float32(), dim)),
            pa.field(CARD, pa.string()),
            SCOPES_FIELD,  # the knowledge scopes of the chunk's document (storage/index/scope_column.py)
        ]
    )


def fts_terms(text: str, skip: frozenset[str] = FTS_SKIP) -> list[str]:
    """The full-text leg's terms: a question's words without the function words found in
    nearly every passage (core.text.lexicon.FTS_SKIP; all of them when nothing else is left). Such a
    word matches most chunks, so scoring its postings was most of the leg's time at a million
    chunks, for no ranking signal."""
    terms = _FTS_SAFE.sub(" ", normalize_text(text)).split()
    return [t for t in terms if t not in skip] or terms


def is_remote(uri: str | Path) -> bool:
    """True for an object-store URI (s3://, gs://, az://, ...), False for a local directory."""
    return "://" in str(uri) and not str(uri).startswith("file://")


def _searched(c: Chunk) -> tuple[str, ...]:
    """What the full-text leg matches a row by: a chunk's title, heading and text; a heading key's
    title and heading alone (a short field, so a question worded like the heading ranks it high)."""
    return (c.title, c.key) if c.kind == "key" else (c.title, c.heading, c.text)


def _card(c: Chunk) -> dict[str, Any]:
    """The fields a hit shows; a heading key shows the chunk under its heading (kind "key" says
    the hit was found by the heading)."""
    fields = {f: getattr(c, f) for f in FIELDS}
    return fields | {"chunk_id": c.shows} if c.kind == "key" else fields


class LanceChunkIndex:
    """ChunkIndex port over a LanceDB table in a local directory or on object storage.

    `path` may be an `s3://bucket/prefix` URI (or any URI LanceDB's object store takes), with
    `storage_options` (endpoint, region, credentials) handed to LanceDB as they are. Several
    workers then read one index: each question checks out the latest committed version, so a
    re-ingest by any process is seen by every worker on its next question.
    """

    def __init__(self, path: Path | str, dim: int, embedder_name: str, candidates: int = 20, rrf_k: int = 60,
                 search: SearchIndexSettings | None = None, storage_options: dict[str, str] | None = None) -> None:
        self.uri = str(path)
        self.remote = is_remote(path)
        self.path = Path(path) if not self.remote else Path(self.uri.split("://", 1)[1])
        if not self.remote:
            self.path.mkdir(parents=True, exist_ok=True)
        self.dim = dim
        self.embedder_name = embedder_name
        self.candidates = candidates
        self.rrf_k = rrf_k
        self.db = lancedb.connect(self.uri, storage_options=storage_options or None)
        self._chunks: Any = None
        self._legs_table = AsyncTableAt(self.uri, TABLE, storage_options or None)  # the legs' view of it
        self.settings = search or SearchIndexSettings()
        self.suggestions = SuggestionTable(self.db, dim)
        self.scope_tables = ScopeTables(self.db, self.uri, dim, self.settings, storage_options or None)
        self._seen_stamp: int | None = None
        self._version: int | None = None  # the chunk table's version, cached while the stamp holds
        self.leg_times = LegTimes()  # the last search's vector and full-text legs (ms)
        self._plans: dict[int, tuple[int, AnnPlan | None]] = {}
        self._scope_rows: dict[str, tuple[int, tuple[int, int]]] = {}  # scope -> (version, (its rows, all rows))
        self._shown = [CARD]  # the columns a hit is read from: the card, or a table's old columns
        self._written = 0  # chunk rows written since the last maintain()
        self.meta = IndexMeta(self.db, self.uri, self.path, self.remote)
        self.meta.check(embedder_name, dim)

    def _write_meta(self) -> None:
        self.meta.write(self.embedder_name, self.dim)

    def table(self) -> Any:
        """The chunks table, or None before the first ingest."""
        if self._chunks is None:
            self._chunks = open_table_or_none(self.db, TABLE)
            if self._chunks is not None:
                self._read_shown(add_cards(self._chunks))
                add_scope_column(self._chunks)
        return self._chunks

    def _read_shown(self, has_card: bool) -> None:
        self._shown = [CARD] if has_card else list(FIELDS)

    def version(self) -> str:
        """The table version this process reads; a newer one committed by another process is
        checked out first. Locally that check is one stat of the versions folder (a new version
        adds a file there) and the version number is cached between commits; on object storage
        it asks the store, as before."""
        tbl = self.table()
        if tbl is None:
            return "empty"
        stamp = self._versions_stamp()
        if stamp is None or stamp != self._seen_stamp or self._version is None:
            with contextlib.suppress(Exception):  # see writes made by other processes
                tbl.checkout_latest()
            self._seen_stamp = stamp
            self._version = int(tbl.version)
            if self._shown != [CARD]:  # another process may have given the table its cards
                self._read_shown(CARD in tbl.schema.names)
        return str(self._version)

    def _versions_stamp(self) -> int | None:
        if self.remote:  # no folder to stat on object storage: ask the store every time
            return None
        try:
            stamp = os.stat(self.path / f"{TABLE}.lance" / "_versions").st_mtime_ns
        except OSError:
            return None
        # a folder's mtime ticks coarsely: two commits within one tick look alike, so a stamp
        # younger than a tick's worth is not trusted and the store is asked
        return None if time.time_ns() - stamp < 200_000_000 else stamp

    def count(self) -> int:
        return 0 if (tbl := self.table()) is None else int(tbl.count_rows("kind != 'key'"))  # not the keys

    # -- reading ----------------------------------------------------------------
    def existing_docs(self) -> dict[str, tuple[str, str]]:
        """doc_id -> (source path, content hash) of what the index holds now."""
        tbl = self.table()
        if tbl is None:
            return {}
        rows = tbl.search().select(["doc_id", "source", "doc_hash"]).limit(None).to_arrow()
        docs = rows.group_by(["doc_id", "source", "doc_hash"]).aggregate([]).to_pylist()  # one row per document
        return {r["doc_id"]: (r["source"], r["doc_hash"]) for r in docs}

    def stored_vectors(self, doc_ids: Sequence[str]) -> dict[str, np.ndarray]:
        """chunk_id -> stored vector of the given documents' chunks (an update re-embeds only
        the chunks whose text changed)."""
        tbl = self.table()
        if tbl is None or not doc_ids:
            return {}
        result = tbl.search().where(f"doc_id IN ({doc_list(doc_ids)})").select(["chunk_id", "vector"]).limit(None).to_arrow()
        return dict(zip(result.column("chunk_id").to_pylist(), vectors_of(result), strict=True))

    def suggestion_sources(self) -> tuple[list[SuggestionRow], list[tuple[str, str]]]:
        """FAQ questions (with vectors) and (doc_id, heading) pairs of the whole chunk table: the
        one-time filling of the suggestion table for an index written before it existed."""
        tbl = self.table()
        if tbl is None:
            return [], []
        faq = tbl.search().where("kind = 'faq'").select([*self._shown, "vector"]).limit(None).to_arrow()
        rows = [SuggestionRow(r["doc_id"], "faq", r["faq_question"], v)
                for r, v in zip(self._hit_rows(faq), vectors_of(faq), strict=True)]
        docs = self._hit_rows(tbl.search().where("kind = 'doc'").select(self._shown).limit(None).to_arrow())
        pairs = {(r["doc_id"], heading_leaf(r["heading"])) for r in docs if r["heading"]}
        return rows, sorted((d, h) for d, h in pairs if h)

    def search(self, query_text: str, query_vector: np.ndarray, k: int, scope: str | None = None) -> list[Hit]:
        """Vector and full-text results fused by reciprocal rank; scores stay cosine. Both legs go
        to LanceDB at once (storage/index/search_legs.py); the vector leg's cosine is its `_distance`
        (an ANN query re-ranks on stored vectors), only the full-text hits bring their vectors.
        A `scope` is a prefilter of both legs: rows outside it are never ranked or read."""
        tbl = self.table()
        if tbl is None:
            return []
        qv = np.asarray(query_vector, dtype=np.float32)
        self.version()  # a stat of the versions folder; checks out a newer version when there is one
        version = int(self._version or 0)
        own = self.scope_tables.for_search(scope, version) if scope and self.settings.scope_tables else None
        try:
            vec, fts = self._legs(tbl, own, scope, version, qv, query_text)
        except Exception:
            if own is None or scope is None:
                raise
            log.warning("scope table of %s unreadable (dropped by another process?); searching the chunk table", scope)
            self.scope_tables.forget(scope)
            vec, fts = self._legs(tbl, None, scope, version, qv, query_text)
        vec_rows = self._hit_rows(vec)
        for row in vec_rows:
            row["sim"] = 1.0 - float(row["_distance"])
        if isinstance(fts, Exception):  # no FTS index yet, or a query the parser rejects
            log.debug("full-text search skipped: %s", fts)
        return fuse(vec_rows, self._fts_rows(fts, qv) if isinstance(fts, pa.Table) else [], k, self.rrf_k)

    def _legs(self, tbl: Any, own: tuple[Any, AsyncTableAt] | None, scope: str | None, version: int,
              qv: np.ndarray, text: str) -> tuple[pa.Table, pa.Table | Exception | None]:
        """Both legs on the scope's own table (`own`: its rows alone, no row mask;
        storage/index/scope_tables.py), else on the chunk table with the scope as a prefilter."""
        if own is not None:
            version = int(own[0].version)
            plan, rows, share, where, legs = self._search_plan(own[0], version), 0, 1.0, "", own[1]
        else:
            plan, (rows, share), where, legs = self._search_plan(tbl, version), self._scope_share(tbl, scope), scope_filter(scope), self._legs_table
        query = LegQuery(qv, " ".join(fts_terms(text)), self.candidates, self._shown,
                         nprobes_for(plan, self.settings) if plan else 0, self.settings.refine_factor,
                         ef_for(plan, self.settings, share), where, bool(where) and rows <= self.settings.scope_exact_rows)
        return run_legs(legs, version, query, self.leg_times)

    def _scope_share(self, tbl: Any, scope: str | None) -> tuple[int, float]:
        """A knowledge scope's rows and their share of the table, read once per table version (the
        label-list index counts them): a scope of few rows is searched exactly, its rows alone,
        like a small table; a larger one through the graph with a list sized to its share."""
        if scope is None:
            return 0, 1.0
        version = int(self._version or 0)
        held = self._scope_rows.get(scope)
        if held is None or held[0] != version:
            counts = (int(tbl.count_rows(scope_filter(scope))), max(1, int(tbl.count_rows())))
            held = self._scope_rows[scope] = (version, counts)
        rows, total = held[1]
        return rows, rows / total

    def _hit_rows(self, result: pa.Table) -> list[dict[str, Any]]:
        """A leg's rows as dicts of the shown fields (unpacked from their cards) plus the leg's
        own columns (`_distance`, `_score`)."""
        if CARD not in result.column_names:
            return result.drop_columns([c for c in ("vector",) if c in result.column_names]).to_pylist()
        cards = result.column(CARD).to_pylist()
        extra = {c: result.column(c).to_pylist() for c in ("_distance", "_score") if c in result.column_names}
        return [unpack(card) | {c: v[i] for c, v in extra.items()} for i, card in enumerate(cards)]

    def _fts_rows(self, result: pa.Table, qv: np.ndarray) -> list[dict[str, Any]]:
        sims = vectors_of(result) @ qv if result.num_rows else np.zeros(0, dtype=np.float32)
        rows = self._hit_rows(result)
        for row, sim in zip(rows, sims, strict=True):
            row["sim"] = float(sim)
        return rows

    def unmentioned(self, words: Sequence[str], scope: str | None = None) -> list[str]:
        """The words no chunk of `scope` holds in its title, heading or text, by the full-text
        index's own matching (stemmed, accents folded, one letter apart: `word_queries`): one lookup of
        a row per word. A word it cannot look up (no full-text index yet) counts as mentioned."""
        tbl = self.table()
        out: list[str] = []
        for word in words if tbl is not None else ():
            with contextlib.suppress(Exception):
                queries = (tbl.search(q, query_type="fts").select(["chunk_id", "_score"]).limit(1) for q in word_queries(word))
                if not any((q.where(scope_filter(scope), prefilter=True) if scope else q).to_arrow().num_rows for q in queries):
                    out.append(word)
        return out

    def suggestion_candidates(self, query_vector: np.ndarray, limit: int,
                              scope: str | None = None) -> list[tuple[str, np.ndarray]]:
        """The `limit` FAQ questions and section headings nearest the question, from their own
        table (written at ingest; prefiltered to `scope`); the chunk table is not read."""
        plan = self._search_plan(self.suggestions.table())
        nprobes = nprobes_for(plan, self.settings) if plan else 0
        return self.suggestions.nearest(query_vector, limit, nprobes, self.settings.refine_factor,
                                        ef_for(plan, self.settings), scope_filter(scope))

    def suggestion_texts(self, limit: int, scope: str | None = None) -> list[str]:
        return self.suggestions.texts(limit, scope_filter(scope))

    def suggestion_verdicts(self, decided_at: str) -> dict[str, bool]:
        return self.suggestions.verdicts.read(decided_at)

    def save_suggestion_verdicts(self, decided_at: str, verdicts: dict[str, bool]) -> None:
        self.suggestions.verdicts.write(decided_at, verdicts)

    # -- writing ----------------------------------------------------------------
    def apply(self, new_chunks: Sequence[Chunk], vectors: np.ndarray, doc_hashes: dict[str, str],
              replace_docs: Sequence[str], suggestions: Sequence[SuggestionRow] = (),
              doc_scopes: Mapping[str, Sequence[str]] | None = None) -> None:
        """Insert `new_chunks` and drop every other chunk of `replace_docs`, in one commit; then
        the same for the documents' suggestion rows (FAQ questions, headings). Every row carries
        the knowledge scopes of its document (`doc_scopes`; none when scopes are not used)."""
        scopes = doc_scopes or {}
        now = datetime.now(UTC).isoformat(timespec="seconds")
        records = [
            {
                "chunk_id": c.chunk_id, "doc_id": c.doc_id, "source": c.source, "kind": c.kind, "position": c.position,
                "text_norm": normalize_text(" ".join(p for p in _searched(c) if p)),
                "doc_hash": doc_hashes[c.doc_id], "ingested_at": now, "vector": vectors[i].astype(np.float32),
                CARD: pack(_card(c)), SCOPES: list(scopes.get(c.doc_id, ())),
            }
            for i, c in enumerate(new_chunks)
        ]
        data = pa.Table.from_pylist(records, schema=schema(self.dim))
        tbl = self.table()
        scoped = self.settings.scope_tables and (bool(scopes) or bool(self.scope_tables.names()))
        old_scopes = scopes_of_docs(tbl, replace_docs) if scoped else set()  # no read without scopes
        if tbl is None:
            self._chunks = self.db.create_table(TABLE, data=data, schema=schema(self.dim))
            self._legs_table.forget()
        else:
            gone = doc_list(replace_docs)
            builder = tbl.merge_insert("chunk_id").when_matched_update_all().when_not_matched_insert_all()
            if gone:
                builder = builder.when_not_matched_by_source_delete(f"doc_id IN ({gone})")
            builder.execute(data)
        if scoped:
            self.scope_tables.write(data, replace_docs, old_scopes)
        self._write_meta()
        self.suggestions.write(suggestions, replace_docs, scopes)
        self._written += len(new_chunks)
        self._version = None

    # -- index maintenance (storage/index/ann.py) ------------------------------------
    def ann_state(self, tbl: Any) -> tuple[AnnPlan | None, int]:
        return (None, 0) if tbl is None else ann_state(tbl)

    def _search_plan(self, tbl: Any, version: int | None = None) -> AnnPlan | None:
        """The ANN plan a query uses, read from the table's schema once per table version
        (`version` when the caller knows it, else the table is asked)."""
        if tbl is None:
            return None
        version = tbl.version if version is None else version
        cached = self._plans.get(id(tbl))
        if cached is None or cached[0] != version:
            cached = self._plans[id(tbl)] = (version, ann_state(tbl)[0])
        return cached[1]

    def maintain(self) -> dict[str, str]:
        """Bring the indexes up to date after a write, without retraining what can be extended:
        the full-text index is built once and then extended; each ANN index (chunks,
        suggestions) is trained when its table reaches `ann_min_rows` and retrained only past
        `retrain_share` of rows written since training. Says what was done, per table."""
        done: dict[str, str] = {}
        self._version = None
        written, self._written = self._written, 0
        suggestions_written, self.suggestions.written = self.suggestions.written, 0
        chunks = self.table()
        if chunks is not None and chunks.count_rows() > 0:
            index_scopes(chunks)
            if self.settings.scope_tables:  # before the chunk table's own commit: see ScopeTables.for_search
                done |= {f"scope {k}": v for k, v in self.scope_tables.sync(chunks).items()}
            done["chunks"] = maintain_table(chunks, written, self.dim, self.settings, self.rebuild_text_index)
        sugg = self.suggestions.table()
        if sugg is not None and sugg.count_rows() > 0:
            index_scopes(sugg)
            done["suggestions"] = maintain_table(sugg, suggestions_written, self.dim, self.settings)
        self.warm()
        return done

    def warm(self) -> None:
        """Read the tables once (after maintenance: at their new versions; when a front end
        starts: each scope's table too), so the first question does not pay for opening the index
        files: 71 ms against 11 ms for the first suggestion lookup at 1M rows, about 50 ms for a
        scope table's first search (bench.system.scale)."""
        probe = np.full(self.dim, 1 / np.sqrt(self.dim), dtype=np.float32)
        try:
            self.suggestion_candidates(probe, 1)
            for scope in [None, *(self.scope_tables.names() if self.settings.scope_tables else [])]:
                self.search("warm", probe, 1, scope=scope)
        except Exception as exc:  # noqa: BLE001 - a warm-up that fails leaves the first question to pay
            log.debug("warm-up after index maintenance: %s", exc)

    def rebuild_text_index(self) -> None:
        """(Re)build the full-text index over normalised text (the first time, or on request)."""
        tbl = self.table()
        if tbl is None or tbl.count_rows() == 0:
            return
        text_index(tbl)
        self._version = None
