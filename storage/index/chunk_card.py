"""A chunk's shown fields packed into one column, the card, so a search reads one column per hit.

Why: LanceDB reads rows at random column by column, so the eleven fields a hit shows cost eleven
random reads per hit, and one column one (bench/README.md, "Scale", and `python -m
bench.system.scale_legs` give the figures). The fields are joined by the ASCII unit separator
(U+001F), taken out of every field first: a control character no document needs, so a card
always splits back into the same fields. A table written before cards existed gets its card column from one SQL
expression over the old columns (no re-embedding, the indexes stay), then drops the columns the
card replaced.
"""

from __future__ import annotations

import logging
import time
from typing import Any

log = logging.getLogger(__name__)

CARD = "card"
SEP = "\x1f"
FIELDS = ("chunk_id", "doc_id", "source", "title", "heading", "url", "kind", "position", "text",
          "faq_question", "faq_answer")
REPLACED = ("title", "heading", "url", "text", "faq_question", "faq_answer")  # kept only in the card


def pack(values: dict[str, Any]) -> str:
    """One card from a chunk's fields (missing ones empty)."""
    return SEP.join(("" if values.get(f) is None else str(values[f])).replace(SEP, " ") for f in FIELDS)


def unpack(card: str) -> dict[str, Any]:
    """The fields of one card; `position` as an int."""
    row: dict[str, Any] = dict(zip(FIELDS, card.split(SEP), strict=True))
    row["position"] = int(row["position"] or 0)
    return row


def card_sql() -> str:
    """The SQL expression that builds a card from a table's old columns (same output as `pack`)."""
    parts = [f"replace(coalesce(CAST({f} AS VARCHAR), ''), chr(31), ' ')" for f in FIELDS]
    return f"concat_ws(chr(31), {', '.join(parts)})"


def add_cards(tbl: Any) -> bool:
    """Give a chunk table written before cards its card column; True when the table has one now.

    Two processes opening the same old table at once race here: the loser's commit fails, and
    the card the winner wrote is found after checking out the latest version."""
    names = set(tbl.schema.names)
    if CARD in names:
        return True
    t0 = time.perf_counter()
    try:
        tbl.add_columns({CARD: card_sql()})
        tbl.drop_columns([c for c in REPLACED if c in names])
        log.info("chunk table: shown fields packed into one card column (%d rows, %.1f s)",
                 tbl.count_rows(), time.perf_counter() - t0)
    except Exception as exc:  # a read-only store, or another process migrating at the same moment
        log.warning("chunk table: could not add its card column (%s); reading the old columns", exc)
        try:
            tbl.checkout_latest()
        except Exception as again:  # noqa: BLE001 - the table is read as it is
            log.debug("checkout after a failed card migration: %s", again)
    return CARD in tbl.schema.names
