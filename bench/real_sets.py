"""The real-question sets and their docs snapshots: where they live, how they are split, and which
part of a page a row's gold section is.

Sets: `bench/data/real-questions/<project>.jsonl` (one row per real question: `question`, `kind`,
`gold_pages`, `gold_section`, `key_phrase`, `absent_terms`, `source`, `why_gold`; each set's README
beside it). Snapshots: `bench/data/sites/<project>-docs/`, rebuilt from each set's public source by
`python -m bench.grounding.snapshots` (specs in `bench/data/real-questions/sites/`), else the copy in
`../shared/sites/`. A snapshot is a built website (a `sitemap.xml`, one `index.html` a page) or a
folder of Markdown sources.

Split by project, never by row: the reader trains on TRAIN projects, rules and thresholds are chosen
on DEV projects, and figures are reported on every other project (test).
"""

from __future__ import annotations

import json
import re
import unicodedata
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from bench import ROOT

SETS = ROOT / "bench" / "data" / "real-questions"
SITES = (ROOT / "bench" / "data" / "sites", ROOT.parent / "shared" / "sites")
TRAIN_PROJECTS = frozenset({"mkdocs", "black", "poetry", "vite", "fastapi", "mkdocs-material"})
DEV_PROJECTS = frozenset({"starlette", "uvicorn", "pydantic"})
KINDS = ("answerable", "not_in_docs")
HOME = "index"  # a built site's home page, as the question files name it
MARKDOWN = (".md", ".mdx", ".markdown")


def split_of(project: str) -> str:
    """train, dev or test: the part a project belongs to."""
    return "train" if project in TRAIN_PROJECTS else "dev" if project in DEV_PROJECTS else "test"


@dataclass(frozen=True)
class RealRow:
    project: str
    ask: str
    answerable: bool
    gold_pages: tuple[str, ...]  # in the row's order: gold_sections[i] is a heading of gold_pages[i]
    gold_sections: tuple[str, ...]
    key_phrase: str
    source: str

    @property
    def split(self) -> str:
        return split_of(self.project)


def load_rows(path: Path) -> list[RealRow]:
    """The rows of one project's question file; a malformed row raises ValueError naming it."""
    out: list[RealRow] = []
    for n, line in enumerate(path.read_text("utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        row = json.loads(line)
        where = f"{path.name}:{n}"
        question, kind = str(row.get("question") or "").strip(), row.get("kind")
        if not question:
            raise ValueError(f"{where}: no question")
        if kind not in KINDS:
            raise ValueError(f"{where}: kind must be one of {', '.join(KINDS)}, not {kind!r}")
        pages = tuple(dict.fromkeys(str(p).strip("/") or HOME for p in row.get("gold_pages") or []))
        if (kind == "answerable") != bool(pages):
            raise ValueError(f"{where}: an answerable row names its gold pages, a not_in_docs row none")
        section = str(row.get("gold_section") or "")
        sections = tuple(s.strip() for s in section.split(" / ")) if section else ()
        if pages and len(sections) not in (0, 1, len(pages)):
            sections = (section.strip(),)  # a heading that itself holds " / "
        out.append(RealRow(path.stem, question, kind == "answerable", pages, sections,
                           str(row.get("key_phrase") or ""), str(row.get("source") or "")))
    return out


def site_of(project: str) -> Path | None:
    """The project's docs snapshot folder, rebuilt or shared; None when neither is here."""
    for root in SITES:
        folder = root / f"{project}-docs"
        if folder.is_dir():
            return folder
    return None


def projects(sets: Path = SETS) -> list[tuple[str, Path, Path]]:
    """(project, question file, docs folder) of every set whose snapshot is here: dev first, then
    test, then train."""
    found = [(p.stem, p, site_of(p.stem)) for p in sorted(sets.glob("*.jsonl"))]
    order = {"dev": 0, "test": 1, "train": 2}
    return sorted([(n, q, s) for n, q, s in found if s is not None], key=lambda f: (order[split_of(f[0])], f[0]))


# -- headings and sections ----------------------------------------------------------------------

_GLYPHS = re.compile(r"[\u00b6\u200b-\u200f\u2060\ufeff\ue000-\uf8ff#]")


def clean_heading(text: str) -> str:
    """A heading as compared: permalink glyphs, zero-width characters and Markdown marks dropped,
    case and spacing folded."""
    text = unicodedata.normalize("NFKC", _GLYPHS.sub("", text)).replace("`", "").replace("*", "")
    return " ".join(text.split()).casefold().strip(" :")


def in_section(chunk_heading: str, chunk_title: str, section: str) -> bool:
    """A chunk with heading path `chunk_heading` ("A > B > C") lies in the section headed `section`
    (the section includes its subsections; a page-title section holds the page's intro)."""
    want = clean_heading(section)
    if not want:
        return False
    parts = [clean_heading(p) for p in chunk_heading.split(" > ")] if chunk_heading else []
    if want in parts:
        return True
    return not parts and clean_heading(chunk_title) == want


def iter_pages(docs: Path) -> Iterator[tuple[str, Path]]:
    """(page name, file) of a snapshot: a built site's sitemap pages, or every Markdown file."""
    if (docs / "sitemap.xml").is_file():
        root = ET.parse(docs / "sitemap.xml").getroot()
        for loc in root.iter("{http://www.sitemaps.org/schemas/sitemap/0.9}loc"):
            page = urlsplit((loc.text or "").strip()).path.strip("/")
            f = docs / page / "index.html" if page else docs / "index.html"
            if f.is_file():
                yield page or HOME, f
        return
    for f in sorted(docs.rglob("*")):
        if f.is_file() and f.suffix.lower() in MARKDOWN:
            yield f.relative_to(docs).with_suffix("").as_posix(), f
