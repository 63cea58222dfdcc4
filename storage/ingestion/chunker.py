"""Split documents into chunks by headings and paragraphs, with overlap."""

from __future__ import annotations

import hashlib
import re
from urllib.parse import quote

from core.text.sentences import split_sentences
from storage.documents import Chunk, Document, Section

_PARA = re.compile(r"\n\s*\n")


def _pieces(text: str, size: int) -> list[str]:
    """Paragraphs, with over-long paragraphs broken at sentence boundaries (or hard)."""
    out: list[str] = []
    for para in _PARA.split(text):
        para = para.strip()
        if not para:
            continue
        if len(para) <= size:
            out.append(para)
            continue
        buf = ""
        for sent in split_sentences(para) or [para]:
            while len(sent) > size:  # a "sentence" longer than a chunk: cut it hard
                if buf:
                    out.append(buf)
                    buf = ""
                out.append(sent[:size])
                sent = sent[size:]
            if buf and len(buf) + 1 + len(sent) > size:
                out.append(buf)
                buf = sent
            else:
                buf = f"{buf} {sent}".strip()
        if buf:
            out.append(buf)
    return out


def _tail(text: str, overlap: int) -> str:
    """The last whole sentences of a chunk, at most `overlap` chars, carried into the next."""
    if overlap <= 0:
        return ""
    tail = ""
    for sent in reversed(split_sentences(text)):
        if len(tail) + len(sent) + 1 > overlap:
            break
        tail = f"{sent} {tail}".strip()
    return tail


def _chunk_id(doc_id: str, position: int, kind: str, text: str) -> str:
    return hashlib.sha1(f"{doc_id}\x00{position}\x00{kind}\x00{text}".encode()).hexdigest()[:20]


def heading_key(doc: Document, heading: str) -> str:
    """The part of a section's heading a reader asks by ("How do I tune the thresholds?"), or ''
    when it says nothing the title does not (a document whose one heading is its title)."""
    leaf = heading.split(" > ")[-1].strip()
    if len(leaf) <= 3 or leaf.startswith("page ") or leaf.casefold() == doc.title.strip().casefold():
        return ""
    return leaf


def with_keys(doc: Document, chunks: list[Chunk]) -> list[Chunk]:
    """Each section chunk followed by its heading key: a row of its own, embedded from the heading
    alone, that finds the chunk when a question is asked the way the heading is written (a body
    of 800 characters dilutes its heading in one vector). Same document and position as the
    chunk, so a search counts the two once and scores the chunk by the better of them."""
    out: list[Chunk] = []
    for c in chunks:
        out.append(c)
        key = heading_key(doc, c.heading) if c.kind == "doc" else ""
        if key:
            out.append(Chunk(_chunk_id(doc.doc_id, c.position, "key", f"{key}\n{c.text}"), c.doc_id, c.source, c.title,
                             c.heading, c.url, "key", c.position, c.text, key=key, shows=c.chunk_id))
    return out


def chunk_document(doc: Document, size: int = 900, overlap: int = 150, min_chars: int = 20,
                   heading_keys: bool = True) -> list[Chunk]:
    """Chunks of one document, in reading order, with stable content-derived ids."""
    chunks: list[Chunk] = []
    position = 0
    for section in doc.sections:
        buf = ""
        carried = ""
        for piece in _pieces(section.text, size):
            if buf and len(buf) + 2 + len(piece) > size:
                chunks.append(_make(doc, section, position, buf))
                position += 1
                carried = _tail(buf, overlap)
                buf = f"{carried}\n\n{piece}".strip() if carried else piece
            else:
                buf = f"{buf}\n\n{piece}".strip()
        if buf and (len(buf) >= min_chars or not chunks) and buf != carried:
            chunks.append(_make(doc, section, position, buf))
            position += 1
    for pair in doc.faqs:
        q, a = pair.question.strip(), pair.answer.strip()
        if not q or not a:
            continue
        url = pair.url or doc.url
        for kind, text in (("faq", q), ("faq_qa", f"{q}\n{a}")):
            chunks.append(
                Chunk(_chunk_id(doc.doc_id, position, kind, text), doc.doc_id, doc.source, doc.title, q, url,
                      kind, position, text, faq_question=q, faq_answer=a)
            )
        position += 1
    return with_keys(doc, chunks) if heading_keys else chunks


def section_url(url: str, anchor: str) -> str:
    """The link to a section: its page's URL with the section's `#anchor` (the page alone when it
    has no anchor, or when the URL already names a fragment)."""
    if not url or not anchor or "#" in url:
        return url
    return f"{url}#{quote(anchor, safe=_FRAGMENT_SAFE)}"


_FRAGMENT_SAFE = "-._~!$&'()*+,;=:@/?"  # RFC 3986 fragment characters, kept as they are


def _make(doc: Document, section: Section, position: int, text: str) -> Chunk:
    return Chunk(_chunk_id(doc.doc_id, position, "doc", text), doc.doc_id, doc.source, doc.title, section.heading,
                 section_url(doc.url, section.anchor), "doc", position, text)
