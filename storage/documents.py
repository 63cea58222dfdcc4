"""Loaded documents and their chunks, before they reach the index."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field


@dataclass
class Section:
    heading: str  # heading path, "Install > From PyPI"
    text: str
    anchor: str = ""  # the fragment that links to the section on its page ("from-pypi"); "" = the page top


@dataclass
class FaqPair:
    question: str
    answer: str
    url: str = ""


@dataclass
class Document:
    doc_id: str  # stable id: path relative to the ingest root's parent
    source: str  # absolute path of the file
    title: str
    url: str = ""
    sections: list[Section] = field(default_factory=list)
    faqs: list[FaqPair] = field(default_factory=list)

    def content_hash(self) -> str:
        """Hash of everything that changes the chunks (text, headings and anchors, FAQ pairs, title, url)."""
        h = hashlib.sha256()
        for part in (self.title, self.url):
            h.update(part.encode("utf-8", "replace") + b"\x00")
        for s in self.sections:
            h.update(s.heading.encode("utf-8", "replace") + b"\x01" + s.text.encode("utf-8", "replace") + b"\x00")
            if self.url and s.anchor:  # an anchor is part of a chunk's link only where the page has a URL
                h.update(b"\x03" + s.anchor.encode("utf-8", "replace") + b"\x00")
        for f in self.faqs:
            h.update(f.question.encode("utf-8", "replace") + b"\x02" + f.answer.encode("utf-8", "replace") + b"\x00")
        return h.hexdigest()


@dataclass
class Chunk:
    chunk_id: str
    doc_id: str
    source: str
    title: str
    heading: str
    url: str
    kind: str  # "doc" | "faq" (question row) | "faq_qa" (question + answer row) | "key" (heading row)
    position: int
    text: str
    faq_question: str = ""
    faq_answer: str = ""
    key: str = ""    # a "key" row: the heading it is found by (its chunk's own fields shown)
    shows: str = ""  # a "key" row: the chunk_id of the chunk under the heading

    def embed_text(self) -> str:
        """What the embedder sees: title and heading give a chunk its topic."""
        if self.kind == "faq":
            return self.faq_question
        if self.kind == "key":
            return self.key
        prefix = " > ".join(p for p in (self.title, self.heading) if p)
        return f"{prefix}\n{self.text}" if prefix else self.text
