"""Reciprocal-rank fusion of the vector and full-text legs into the hits a turn reads.

Why a module of its own: the chunk search (storage/index/chunk_search.py) runs the legs on the
table; how two rankings become one list of hits is a rule of its own, tested apart from LanceDB.
"""

from __future__ import annotations

from typing import Any

from core.messages import Hit, HitKind
from core.retrieve.fusion import reciprocal_ranks


def fuse(vec_rows: list[dict[str, Any]], fts_rows: list[dict[str, Any]], k: int, rrf_k: int) -> list[Hit]:
    """The top `k` chunks by reciprocal rank over both legs; each keeps its best cosine. An FAQ's
    question and answer rows count once per ranking, and a heading key row scores its chunk."""
    fused: dict[tuple[str, int], dict[str, Any]] = {}
    for source_rank, rows in (("v", vec_rows), ("f", fts_rows)):
        seen: set[tuple[str, int]] = set()
        for row in rows:
            key = _key(row)
            sim = row["sim"]
            entry = fused.setdefault(key, {"row": row, "sim": sim, "fused": 0.0, "kw": None, "by_heading": 0.0})
            entry["sim"] = max(entry["sim"], sim)
            if row["kind"] == "faq_qa":  # an FAQ shows its question + answer row
                entry["row"] = row
            if row["kind"] == "key":  # the chunk's heading key: the chunk, found by its heading
                entry["by_heading"] = max(entry["by_heading"], sim)
            if key in seen:  # an FAQ's question row and answer row count once per ranking
                continue
            seen.add(key)
            if source_rank == "f" and entry["kw"] is None:  # its full-text place, among distinct chunks
                entry["kw"] = len(seen)
    for key, score in reciprocal_ranks(([_key(r) for r in rows] for rows in (vec_rows, fts_rows)), rrf_k).items():
        fused[key]["fused"] = score
    ordered = sorted(fused.values(), key=lambda e: (-e["fused"], -e["sim"], e["row"]["chunk_id"]))[:k]
    return [_hit(e) for e in ordered]


def _key(row: dict[str, Any]) -> tuple[str, int]:
    """The chunk a row is of: an FAQ's question and answer rows, and a heading key row, are its chunk."""
    return row["doc_id"], int(row["position"])


def _hit(e: dict[str, Any]) -> Hit:
    r = e["row"]
    faq = r["kind"] in ("faq", "faq_qa")
    text = f"{r['faq_question']}\n{r['faq_answer']}" if faq else r["text"]
    return Hit(
        chunk_id=r["chunk_id"], doc_id=r["doc_id"], source=r["source"], title=r["title"],
        heading=r["heading"], text=text, similarity=round(e["sim"], 6), fused=round(e["fused"], 6),
        keyword_rank=e["kw"], kind=HitKind.FAQ if faq else HitKind.DOC, faq_question=r["faq_question"],
        faq_answer=r["faq_answer"], url=r["url"], position=int(r["position"]),
        heading_similarity=round(e["by_heading"], 6),
    )
