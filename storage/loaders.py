"""Read files into Documents: Markdown, text, HTML, PDF and FAQ files (CSV, JSONL, YAML)."""

from __future__ import annotations

import csv
import io
import json
import logging
import re
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path

import yaml

from storage.documents import Document, FaqPair, Section

DOC_SUFFIXES = {".md", ".markdown", ".txt", ".text", ".rst", ".html", ".htm", ".pdf"}
FAQ_SUFFIXES = {".csv", ".jsonl", ".yaml", ".yml"}
SUFFIXES = DOC_SUFFIXES | FAQ_SUFFIXES
_MD_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")

log = logging.getLogger(__name__)


class LoadError(Exception):
    """A file that cannot be read as a document (binary, malformed FAQ, ...)."""


def read_text(path: Path) -> str:
    data = path.read_bytes()
    if b"\x00" in data[:4096]:
        raise LoadError("binary file")
    for enc in ("utf-8-sig", "utf-16"):
        try:
            return data.decode(enc)
        except UnicodeDecodeError:
            continue
    return data.decode("latin-1")


def load_markdown(path: Path, doc_id: str) -> Document:
    text = read_text(path)
    title = ""
    stack: list[str] = []
    sections: list[Section] = []
    buf: list[str] = []
    in_fence = False

    def flush() -> None:
        body = "\n".join(buf).strip()
        if body:
            levels = stack[1:] if title and stack and stack[0] == title else stack
            sections.append(Section(" > ".join(p for p in levels if p), body))
        buf.clear()

    for line in text.splitlines():
        if _FENCE.match(line):
            in_fence = not in_fence
        m = None if in_fence else _MD_HEADING.match(line)
        if m:
            flush()
            level, heading = len(m.group(1)), m.group(2).strip()
            if level == 1 and not title:
                title = heading
            del stack[level - 1 :]
            while len(stack) < level - 1:
                stack.append("")
            stack.append(heading)
            continue
        buf.append(line)
    flush()
    return Document(doc_id, str(path.resolve()), title or path.stem.replace("-", " ").replace("_", " "), sections=sections)


def load_text(path: Path, doc_id: str) -> Document:
    text = read_text(path)
    return Document(doc_id, str(path.resolve()), path.stem.replace("-", " ").replace("_", " "), sections=[Section("", text)])


class _HtmlText(HTMLParser):
    """Collect title, canonical URL and heading-delimited text, skipping chrome."""

    SKIP = {"script", "style", "nav", "footer", "header", "noscript", "svg", "form", "aside"}
    BLOCK = {"p", "div", "li", "pre", "td", "th", "br", "tr", "section", "article", "blockquote", "dd", "dt"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.title = ""
        self.url = ""
        self.sections: list[Section] = []
        self._skip = 0
        self._in_title = False
        self._heading_level = 0
        self._heading_buf: list[str] = []
        self._stack: list[str] = []
        self._buf: list[str] = []

    def _flush(self) -> None:
        body = re.sub(r"[ \t]+", " ", "".join(self._buf))
        body = re.sub(r"\n\s*\n+", "\n\n", body).strip()
        if body:
            self.sections.append(Section(" > ".join(s for s in self._stack if s), body))
        self._buf = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag in self.SKIP:
            self._skip += 1
        elif tag == "title":
            self._in_title = True
        elif tag == "link" and (a.get("rel") or "") == "canonical" and a.get("href"):
            self.url = a["href"] or ""
        elif tag == "meta" and a.get("property") == "og:url" and a.get("content") and not self.url:
            self.url = a["content"] or ""
        elif re.fullmatch(r"h[1-6]", tag) and not self._skip:
            self._flush()
            self._heading_level = int(tag[1])
            self._heading_buf = []
        elif tag in self.BLOCK:
            self._buf.append("\n\n" if tag != "br" else "\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in self.SKIP:
            self._skip = max(0, self._skip - 1)
        elif tag == "title":
            self._in_title = False
        elif re.fullmatch(r"h[1-6]", tag) and self._heading_level:
            heading = " ".join("".join(self._heading_buf).split())
            level = self._heading_level
            self._heading_level = 0
            if level == 1 and not self.title:
                self.title = heading
            del self._stack[level - 1 :]
            while len(self._stack) < level - 1:
                self._stack.append("")
            self._stack.append(heading if level > 1 else "")
        elif tag in self.BLOCK:
            self._buf.append("\n\n")

    def handle_data(self, data: str) -> None:
        if self._skip:
            return
        if self._in_title:
            self.title = (self.title + data).strip() if not self.sections else self.title
            return
        if self._heading_level:
            self._heading_buf.append(data)
            return
        self._buf.append(data)


def load_html(path: Path, doc_id: str) -> Document:
    parser = _HtmlText()
    parser.feed(read_text(path))
    parser.close()
    parser._flush()
    title = " ".join(parser.title.split()) or path.stem
    return Document(doc_id, str(path.resolve()), title, url=parser.url, sections=parser.sections)


def load_pdf(path: Path, doc_id: str) -> Document:
    from pypdf import PdfReader

    try:
        reader = PdfReader(str(path))
        pages = [(i + 1, page.extract_text() or "") for i, page in enumerate(reader.pages)]
        meta_title = (reader.metadata.title if reader.metadata else None) or ""
    except Exception as exc:  # pypdf raises many kinds on damaged files
        raise LoadError(f"unreadable PDF: {exc}") from exc
    sections = [Section(f"page {n}", text) for n, text in pages if text.strip()]
    return Document(doc_id, str(path.resolve()), str(meta_title) or path.stem, sections=sections)


def _pairs_from_records(records: list[object], where: str) -> list[FaqPair]:
    pairs: list[FaqPair] = []
    for i, rec in enumerate(records):
        if not isinstance(rec, dict):
            raise LoadError(f"{where}: record {i + 1} is not a mapping")
        low = {str(k).lower(): v for k, v in rec.items()}
        q, a = low.get("question") or low.get("q"), low.get("answer") or low.get("a")
        if not q or not a:
            raise LoadError(f"{where}: record {i + 1} needs 'question' and 'answer'")
        pairs.append(FaqPair(str(q), str(a), str(low.get("url") or "")))
    return pairs


def load_faq(path: Path, doc_id: str) -> Document:
    text = read_text(path)
    suffix = path.suffix.lower()
    records: list[object]
    try:
        if suffix == ".csv":
            records = list(csv.DictReader(io.StringIO(text)))
        elif suffix == ".jsonl":
            records = [json.loads(line) for line in text.splitlines() if line.strip()]
        else:
            data = yaml.safe_load(text)
            if isinstance(data, dict):
                data = data.get("faq") or data.get("faqs") or data.get("questions") or []
            records = list(data or [])
    except (ValueError, yaml.YAMLError, csv.Error) as exc:
        raise LoadError(f"malformed FAQ file: {exc}") from exc
    title = path.stem.replace("-", " ").replace("_", " ")
    return Document(doc_id, str(path.resolve()), title, faqs=_pairs_from_records(records, path.name))


def load_file(path: Path, doc_id: str) -> Document:
    suffix = path.suffix.lower()
    if suffix in (".md", ".markdown"):
        return load_markdown(path, doc_id)
    if suffix in (".html", ".htm"):
        return load_html(path, doc_id)
    if suffix == ".pdf":
        return load_pdf(path, doc_id)
    if suffix in FAQ_SUFFIXES:
        return load_faq(path, doc_id)
    return load_text(path, doc_id)


def discover(root: Path) -> Iterator[tuple[Path, str]]:
    """Files under `root` that groundbot can ingest, with their doc ids, sorted.

    A symlink inside the folder that leads out of it is skipped (with a warning): ingesting a
    folder never reads files elsewhere on the machine, which is what lets chat admins re-ingest
    a folder safely. To ingest such a file, name its real path."""
    root = root.resolve()
    if root.is_file():
        yield root, root.name
        return
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if any(part.startswith(".") for part in rel.parts):
            continue
        if path.is_file() and path.suffix.lower() in SUFFIXES:
            if path.is_symlink() and not path.resolve().is_relative_to(root):
                log.warning("skipped %s: a symlink to %s, outside %s", path, path.resolve(), root)
                continue
            yield path, f"{root.name}/{rel.as_posix()}"
