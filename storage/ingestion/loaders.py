"""Read files into Documents: Markdown, text, HTML, PDF and FAQ files (CSV, JSONL, YAML)."""

from __future__ import annotations

import csv
import io
import json
import logging
import re
import threading
import unicodedata
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path

import yaml

from storage.documents import Document, FaqPair, Section

DOC_SUFFIXES = {".md", ".markdown", ".txt", ".text", ".rst", ".html", ".htm", ".pdf"}
FAQ_SUFFIXES = {".csv", ".jsonl", ".yaml", ".yml"}
SUFFIXES = DOC_SUFFIXES | FAQ_SUFFIXES

log = logging.getLogger(__name__)


class LoadError(Exception):
    """A file that cannot be read as a document (binary, malformed FAQ, ...)."""


def read_text(path: Path) -> str:
    """The file's text (see `decode`)."""
    return decode(path.read_bytes())


def decode(data: bytes) -> str:
    """Bytes as text: UTF-8 (or a BOM's encoding), else the encoding charset-normalizer
    detects (a cp1252 or latin-1 file is not UTF-16, whatever a blind decode says)."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16")
    if b"\x00" in data[:4096]:
        raise LoadError("binary file")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        pass
    from charset_normalizer import from_bytes

    matches = list(from_bytes(data))
    if not matches:
        raise LoadError("not a text file (no text encoding fits)")
    # short texts fit several legacy code pages about equally; ties go to the commonest ones
    close = {m.encoding: m for m in matches if m.chaos <= matches[0].chaos + 0.1}
    chosen = next((close[e] for e in _COMMON_LEGACY if e in close), matches[0])
    return str(chosen)


_COMMON_LEGACY = ("cp1252", "cp1256", "cp1251")
_TRAFILATURA = threading.Lock()  # it aborted the process when pages were read in several threads at once
_FRONT_MATTER = re.compile(r"\A---[ \t]*\n(.*?)\n(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.DOTALL)
_TAG = re.compile(r"<[^>]+>")


def _front_matter(text: str) -> tuple[str, str]:
    """(YAML front matter's title or "", the text without the front matter)."""
    m = _FRONT_MATTER.match(text)
    if not m:
        return "", text
    try:
        meta = yaml.safe_load(m.group(1))
    except yaml.YAMLError:
        meta = None
    title = str(meta.get("title", "")) if isinstance(meta, dict) else ""
    return title, text[m.end():]


def markdown_sections(text: str) -> tuple[str, list[Section]]:
    """(title, sections) of Markdown, with headings as markdown-it reads them (ATX and setext,
    never inside code), HTML blocks reduced to their text, and front matter dropped."""
    from markdown_it import MarkdownIt

    meta_title, text = _front_matter(text)
    lines = text.splitlines()
    tokens = MarkdownIt("commonmark").parse(text)
    headings: list[tuple[int, int, int, str]] = []  # first line, end line, level, text
    html_lines: set[int] = set()
    slugs = Slugs()
    anchors: list[str] = []  # each heading's slug, in order: a repeated heading's is numbered
    for i, tok in enumerate(tokens):
        if tok.type == "heading_open" and tok.map:
            inline = tokens[i + 1]
            headings.append((tok.map[0], tok.map[1], int(tok.tag[1]), inline.content.strip()))
            anchors.append(slugs.slug(_inline_text(inline)))
        elif tok.type == "html_block" and tok.map:
            html_lines.update(range(tok.map[0], tok.map[1]))
    title = meta_title
    stack: list[tuple[str, str]] = []  # (heading, anchor) per level
    sections: list[Section] = []

    def add(start: int, end: int) -> None:
        body = "\n".join(_TAG.sub("", lines[j]) if j in html_lines else lines[j] for j in range(start, end)).strip()
        if body:
            levels = stack[1:] if title and stack and stack[0][0] == title else stack
            anchor = next((a for h, a in reversed(levels) if h and a), "")
            sections.append(Section(" > ".join(h for h, _ in levels if h), body, anchor))

    cursor = 0
    for (first, end, level, heading), anchor in zip(headings, anchors, strict=True):
        add(cursor, first)
        cursor = end
        if level == 1 and not title:
            title = heading
        del stack[level - 1 :]
        while len(stack) < level - 1:
            stack.append(("", ""))
        stack.append((heading, anchor))
    add(cursor, len(lines))
    return title, sections


def _inline_text(inline: object) -> str:
    """A Markdown heading's text as it reads on the rendered page (code and link text, no markup)."""
    children = getattr(inline, "children", None) or []
    parts = [c.content for c in children if c.type in ("text", "code_inline")]
    return "".join(parts) if parts else str(getattr(inline, "content", ""))


class Slugs:
    """Heading anchors as GitHub and GitLab make them from a Markdown file's headings: lower case,
    punctuation dropped, spaces as hyphens, letters of every script kept; a repeated heading's
    anchor is numbered ("usage", "usage-1")."""

    def __init__(self) -> None:
        self.seen: dict[str, int] = {}

    def slug(self, text: str) -> str:
        base = "".join(ch for ch in text.strip().lower()
                       if ch in " -_" or unicodedata.category(ch)[0] in "LMN").replace(" ", "-")
        if not base:
            return ""
        n = self.seen.get(base, 0)
        self.seen[base] = n + 1
        return base if n == 0 else f"{base}-{n}"


def _stem_title(name: str) -> str:
    return Path(name).stem.replace("-", " ").replace("_", " ")


# a Markdown page's part between these two lines is shown to readers but not indexed: a generated
# reference (docs/configuration.md's table of every setting) whose rows would crowd out the sections
# that answer a question in prose
NOT_INDEXED = "<!-- groundbot: not indexed -->"
INDEXED = "<!-- groundbot: indexed -->"


def indexed_part(text: str) -> str:
    """`text` without its not-indexed parts (an unclosed one runs to the end)."""
    kept, rest = [], text
    while NOT_INDEXED in rest:
        head, rest = rest.split(NOT_INDEXED, 1)
        kept.append(head)
        rest = rest.split(INDEXED, 1)[1] if INDEXED in rest else ""
    return "".join(kept) + rest


def load_markdown(text: str, doc_id: str, source: str, name: str) -> Document:
    title, sections = markdown_sections(indexed_part(text))
    return Document(doc_id, source, title or _stem_title(name), sections=sections)


def load_text(text: str, doc_id: str, source: str, name: str) -> Document:
    return Document(doc_id, source, _stem_title(name), sections=[Section("", text)])


_PERMALINK_GLYPHS = {"¶", "§", "#", "🔗"}


def heading_text(text: str) -> str:
    """A heading as it reads: without the permalink glyphs themes add to it ("¶", a private-use
    icon-font character, a zero-width space) and with its spaces squashed."""
    kept = "".join(ch for ch in text if unicodedata.category(ch) not in ("Co", "Cf") and ch not in "¶§")
    return " ".join(kept.split())


class _HtmlText(HTMLParser):
    """Collect title, canonical URL and heading-delimited text, skipping chrome. Each section keeps
    its heading's anchor: the heading element's `id`, else the `id` (or `name`) of an element inside
    it, else the `#fragment` its permalink points to, else the `id` of an element opened right before
    it with no text between (TypeDoc's `<a id>` before a heading, Sphinx's `<section id>` around
    one); a heading without one links where its parent heading does."""

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
        self._heading_id = ""  # the heading element's own id
        self._inner_id = ""  # the first id (or name) of an element inside the heading
        self._permalink = ""  # the fragment of a link inside the heading
        self._heading_before = ""  # the id opened right before the heading
        self._link: list[str] | None = None  # text of a "#..." link inside the heading, while in it
        self._before = ""  # the id of an element opened since the last text: a heading's anchor placed before it
        self._stack: list[tuple[str, str]] = []  # (heading, anchor) per level
        self._buf: list[str] = []

    def _flush(self) -> None:
        body = re.sub(r"[ \t]+", " ", "".join(self._buf))
        body = re.sub(r"\n\s*\n+", "\n\n", body).strip()
        if body:
            anchor = next((a for h, a in reversed(self._stack) if a), "")
            self.sections.append(Section(" > ".join(h for h, _ in self._stack if h), body, anchor))
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
            own = (a.get("id") or "").strip()
            self._heading_id, self._inner_id, self._permalink, self._link = own, "", "", None
            self._heading_before, self._before = self._before, ""
        elif self._heading_level:
            self._inner_id = self._inner_id or (a.get("id") or a.get("name") or "").strip()
            href = (a.get("href") or "").strip()
            if tag == "a" and href.startswith("#"):
                self._permalink = self._permalink or href[1:]
                self._link = []
        else:
            self._before = (a.get("id") or a.get("name") or "").strip() or self._before
            if tag in self.BLOCK:
                self._buf.append("\n\n" if tag != "br" else "\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in self.SKIP:
            self._skip = max(0, self._skip - 1)
        elif tag == "title":
            self._in_title = False
        elif re.fullmatch(r"h[1-6]", tag) and self._heading_level:
            self._end_heading()
        elif tag == "a" and self._link is not None:
            text = "".join(self._link)
            if any(ch.isalnum() for ch in text) and not set(text.strip()) <= _PERMALINK_GLYPHS:
                self._heading_buf.append(text)  # a link in the heading's words; a permalink's glyph is dropped
            self._link = None
        elif tag in self.BLOCK:
            self._buf.append("\n\n")

    def _end_heading(self) -> None:
        if self._link is not None:  # a permalink left open
            self._heading_buf.extend(self._link)
            self._link = None
        heading = heading_text("".join(self._heading_buf))
        level = self._heading_level
        self._heading_level = 0
        if level == 1 and not self.title:
            self.title = heading
        anchor = self._heading_id or self._inner_id or self._permalink or self._heading_before
        del self._stack[level - 1 :]
        while len(self._stack) < level - 1:
            self._stack.append(("", ""))
        self._stack.append((heading, anchor) if level > 1 else ("", ""))

    def handle_data(self, data: str) -> None:
        if self._skip:
            return
        if self._in_title:
            self.title = (self.title + data).strip() if not self.sections else self.title
            return
        if self._link is not None:
            self._link.append(data)
            return
        if self._heading_level:
            self._heading_buf.append(data)
            return
        if data.strip():
            self._before = ""
        self._buf.append(data)


def _squash(text: str) -> str:
    return " ".join(text.split())


def load_html(html: str, doc_id: str, source: str, name: str) -> Document:
    """A saved web page: its headings give the sections, and only the paragraphs trafilatura
    counts as the page's main content are kept (navigation, cookie banners, asides, footers
    and related-article lists are dropped). The title is the article's (without the site name
    a <title> often adds), the canonical URL the page head's.
    A page trafilatura finds no main content in is kept whole, chrome tags skipped."""
    import trafilatura

    parser = _HtmlText()
    parser.feed(html)
    parser.close()
    parser._flush()
    sections = parser.sections
    with _TRAFILATURA:
        main = trafilatura.extract(html, output_format="txt", include_comments=False, include_tables=True)
        meta = trafilatura.extract_metadata(html)
    if main and main.strip():
        content = _squash(main)
        kept: list[Section] = []
        for sec in sections:
            paragraphs = [p for p in re.split(r"\n\s*\n", sec.text) if _squash(p) and _squash(p) in content]
            if paragraphs:
                kept.append(Section(sec.heading, "\n\n".join(p.strip() for p in paragraphs), sec.anchor))
        sections = kept or sections
    title = " ".join(((meta.title if meta else None) or parser.title).split()) or Path(name).stem
    return Document(doc_id, source, title, url=parser.url, sections=sections)


def load_pdf(data: bytes, doc_id: str, source: str, name: str) -> Document:
    from pypdf import PdfReader

    try:
        reader = PdfReader(io.BytesIO(data))
        pages = [(i + 1, page.extract_text() or "") for i, page in enumerate(reader.pages)]
        meta_title = (reader.metadata.title if reader.metadata else None) or ""
    except Exception as exc:  # pypdf raises many kinds on damaged files
        raise LoadError(f"unreadable PDF: {exc}") from exc
    sections = [Section(f"page {n}", text) for n, text in pages if text.strip()]
    return Document(doc_id, source, str(meta_title) or Path(name).stem, sections=sections)


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


def load_faq(text: str, doc_id: str, source: str, name: str) -> Document:
    suffix = Path(name).suffix.lower()
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
    return Document(doc_id, source, _stem_title(name), faqs=_pairs_from_records(records, Path(name).name))


def load_file(path: Path, doc_id: str) -> Document:
    return load_content(path.read_bytes(), path.name, doc_id, str(path.resolve()))


def load_content(data: bytes, name: str, doc_id: str, source: str) -> Document:
    """A document from its bytes, read by the suffix of `name` (a file's, a repository path's,
    or a web page's, which is given as "page.html"): files and synced sources read alike."""
    suffix = Path(name).suffix.lower()
    if suffix == ".pdf":
        return load_pdf(data, doc_id, source, name)
    text = decode(data)
    if suffix in (".md", ".markdown"):
        return load_markdown(text, doc_id, source, name)
    if suffix in (".html", ".htm"):
        return load_html(text, doc_id, source, name)
    if suffix in FAQ_SUFFIXES:
        return load_faq(text, doc_id, source, name)
    return load_text(text, doc_id, source, name)


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
