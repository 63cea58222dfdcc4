"""LanceDB table helpers every part of the chunk index shares: open a table that may not exist
yet, read a vector column as one array, build the full-text index the searches expect."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pyarrow as pa


def open_table_or_none(db: Any, name: str) -> Any:
    """LanceDB table `name`, or None while it does not exist yet (before the first ingest)."""
    try:
        return db.open_table(name)
    except (FileNotFoundError, ValueError):
        return None


def vectors_of(result: pa.Table, column: str = "vector") -> np.ndarray:
    """A fixed-size-list vector column as one (rows, dim) float32 array, without Python lists."""
    col = result.column(column).combine_chunks()
    if len(col) == 0:
        return np.zeros((0, 0), dtype=np.float32)
    dim = col.type.list_size
    return np.asarray(col.flatten().to_numpy(zero_copy_only=False), dtype=np.float32).reshape(len(col), dim)


def text_index(tbl: Any) -> None:
    """The full-text index over normalised text, the same on the chunk table and every scope table."""
    with warnings.catch_warnings():  # the native (non-tantivy) index is what we want; the alias is deprecated
        warnings.simplefilter("ignore")
        tbl.create_fts_index("text_norm", replace=True, stem=True, remove_stop_words=False, ascii_folding=True)
