"""What every source's builder of reader training pairs shares: the pair, the split of a source's
documents (decided from a document's key before anything of it is parsed), and the chunking of a
long passage the way groundbot ingests it, so the reader learns on passages shaped like its chunks."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from storage.documents import Document, Section
from storage.ingestion.chunker import chunk_document

DATASETS = Path(__file__).resolve().parents[3].parent / "shared" / "datasets"
WORK = Path("/tmp/groundbot-reader")  # wheels and unpacked third-party files (never committed)


@dataclass(frozen=True)
class ReaderPair:
    """One (question, passage) example: label 1 when the passage answers the question."""

    question: str
    title: str
    heading: str
    text: str
    label: int
    source: str  # the builder that made it
    group: str  # the source document it comes from (splits never cut a group)
    kind: str = ""  # why it is a negative or a positive ("own passage", "same article", "mined", ...)


def split_of(key: str, dev_share: int = 10, test_share: int = 10) -> str:
    """train / dev / test for a source document, from a hash of its key (stable across runs)."""
    bucket = int(hashlib.sha256(key.encode("utf-8")).hexdigest()[:8], 16) % 100
    if bucket < test_share:
        return "test"
    if bucket < test_share + dev_share:
        return "dev"
    return "train"


def chunk_texts(title: str, text: str, heading: str = "") -> list[str]:
    """The chunk texts groundbot would make of a passage (default chunk size and overlap)."""
    doc = Document(doc_id=hashlib.sha1(text.encode("utf-8")).hexdigest()[:12], source="", title=title,
                   sections=[Section(heading, text)])
    return [c.text for c in chunk_document(doc, heading_keys=False) if c.kind == "doc"]


def norm(text: str) -> str:
    return " ".join(text.lower().split())


def holds(passage: str, answer: str) -> bool:
    """The answer's text is in the passage (case and spacing ignored)."""
    return bool(answer.strip()) and norm(answer) in norm(passage)
