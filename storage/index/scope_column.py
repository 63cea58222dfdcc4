"""The knowledge scopes of each row, as a column LanceDB filters on before it searches.

Why: a chat answered from one team's documents must never read another team's passages, so the
scope is a prefilter inside the index (LanceDB's `where`, applied before the vector and
full-text legs rank anything), not a filter on the results: a post-filter would read, rank and
drop the other scopes' rows, and leave fewer than k hits. The `scopes` column is a list of
scope names (a document may belong to several scopes) with a label-list index, so
`array_has_any(scopes, [...])` is answered from the index. Rows written with no scopes hold an
empty list; an index written before this column gets it (empty) when opened.
"""

from __future__ import annotations

import logging
from typing import Any

import pyarrow as pa

log = logging.getLogger(__name__)

SCOPES = "scopes"
SCOPES_INDEX = "scopes_idx"
FIELD = pa.field(SCOPES, pa.list_(pa.string()))


def scope_filter(scope: str | None) -> str:
    """The LanceDB prefilter for one scope ('' = none: the whole index)."""
    if scope is None:
        return ""
    return f"array_has_any({SCOPES}, ['{scope.replace(chr(39), chr(39) * 2)}'])"


def add_scope_column(tbl: Any) -> None:
    """Give a table written before scopes existed its (empty) scopes column: its rows belong to
    no scope until they are ingested again with scopes configured."""
    if SCOPES in tbl.schema.names:
        return
    try:
        tbl.add_columns(FIELD)
        log.info("table %s: scopes column added", getattr(tbl, "name", "?"))
    except Exception as exc:  # a read-only store, or another process adding it at the same moment
        log.warning("could not add the scopes column (%s); scoped searches find nothing until a re-ingest", exc)


def index_scopes(tbl: Any) -> bool:
    """Build the label-list index on the scopes column once (later writes extend it through
    `optimize`); True when it was built now."""
    from lancedb.index import LabelList

    if SCOPES not in tbl.schema.names or SCOPES_INDEX in {i.name for i in tbl.list_indices()}:
        return False
    tbl.create_index(SCOPES, config=LabelList(), replace=True)
    return True
