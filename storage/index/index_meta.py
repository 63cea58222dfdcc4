"""Which embedder built an index folder, kept beside it.

Why: vectors of one embedder searched with another's question vectors give nonsense that looks
like answers; an index says which embedder (and dimension) wrote it, and opening it with another
is a clear error asking for a re-ingest. Locally a JSON file beside the tables; on object storage
(where groundbot has no file API of its own) a one-row table.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

META_TABLE = "groundbot_meta"
META_FILE = "groundbot-index.json"


class IndexMeta:
    """The embedder name and dimension recorded for one index folder."""

    def __init__(self, db: Any, uri: str, path: Path, remote: bool) -> None:
        self.db, self.uri, self.path, self.remote = db, uri, path, remote

    def read(self) -> dict[str, Any]:
        if not self.remote:
            meta = self.path / META_FILE
            return dict(json.loads(meta.read_text())) if meta.exists() else {}
        try:
            rows = self.db.open_table(META_TABLE).to_arrow().to_pylist()
        except (FileNotFoundError, ValueError):
            return {}
        return {"embedder": rows[0]["embedder"], "dim": rows[0]["dim"]} if rows else {}

    def check(self, embedder: str, dim: int) -> None:
        data = self.read()
        if data and (data.get("embedder") != embedder or data.get("dim") != dim):
            raise RuntimeError(
                f"index at {self.uri} was built with embedder {data.get('embedder')!r}; "
                f"config asks for {embedder!r}. Re-ingest into a fresh data dir."
            )

    def write(self, embedder: str, dim: int) -> None:
        if not self.remote:
            (self.path / META_FILE).write_text(json.dumps({"embedder": embedder, "dim": dim}))
        elif not self.read():
            self.db.create_table(META_TABLE, data=[{"embedder": embedder, "dim": dim}], mode="overwrite")
