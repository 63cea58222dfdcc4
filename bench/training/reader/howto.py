"""How-to documentation: the docs folders of permissively licensed Python projects' source
distributions (PyPI, `pip download --no-deps --no-binary NAME`, never installed, never committed).
Every section whose heading asks a question ("Is the Session thread-safe?", "How to log a user
out" read as "How do I log a user out?") gives that question against its section's opening chunk
(positive) and the opening chunks of two other sections of the same page, those sharing most of the
question's words (negatives: same product, same words, another question's answer). That is the
knowledge base groundbot serves, sibling sections of a how-to page, which no other source has.

A section's own heading would give its question away, so most questions are read without any
heading (the page title only, as a chunk without a heading), and the rest with every section's own.
Split by page (project and path) before a page is parsed."""

from __future__ import annotations

import re
import subprocess
import sys
import tarfile
from pathlib import Path

from bench.training.reader.common import WORK, ReaderPair, chunk_texts, split_of
from core.text.lexicon import content_terms

# project: (requirement, licence of its docs, docs folder inside the sdist)
SDISTS = {
    "django": ("django==5.2.19", "BSD-3-Clause", "docs"),
    "sqlalchemy": ("sqlalchemy==2.1.9", "MIT", "doc/build"),
    "celery": ("celery==5.7.0", "BSD-3-Clause", "docs"),
    "scrapy": ("scrapy==2.19.0", "BSD-3-Clause", "docs"),
    "pytest": ("pytest==9.2.0", "MIT", "doc/en"),
    "tornado": ("tornado==6.6.1", "Apache-2.0", "docs"),
    "flask": ("flask==3.1.3", "BSD-3-Clause", "docs"),
    "jinja2": ("jinja2==3.1.6", "BSD-3-Clause", "docs"),
    "sphinx": ("sphinx==9.0.4", "BSD-2-Clause", "doc"),
    "twisted": ("twisted==26.10.0", "MIT", "docs"),
    "ipython": ("ipython==9.18.1", "BSD-3-Clause", "docs/source"),
    "pip": ("pip==26.3", "MIT", "docs/html"),
    "click": ("click==8.5.1", "BSD-3-Clause", "docs"),
    "gunicorn": ("gunicorn==27.0.1", "MIT", "docs"),
    "coverage": ("coverage==7.17.5", "Apache-2.0", "doc"),
    "black": ("black==26.10.1", "MIT", "docs"),
    "alembic": ("alembic==1.20.1", "MIT", "docs/_sources"),
    "docutils": ("docutils==0.23", "Public Domain / BSD-2-Clause", "."),
    "attrs": ("attrs==26.1.0", "MIT", "docs"),
    "xarray": ("xarray==2026.9.0", "Apache-2.0", "doc"),
    "networkx": ("networkx==3.6.1", "BSD-3-Clause", "doc"),
    "dask": ("dask==2026.8.0", "BSD-3-Clause", "docs"),
}
SKIP = ("release", "changelog", "change_log", "history", "whatsnew", "changes", "news", "migration")  # version notes: no how-to
HEADING_SHARE = 10  # percent of questions read with every section's own heading
MIN_WORDS = 20  # a section shorter than this (a "See ..." pointer) answers nothing by itself
_ROLE = re.compile(r":[\w:+.-]+:`~?\.?([^`<]*?)\s*(?:<[^>]*>)?`")
_HOW_TO = re.compile(r"^how to (\w.*)$", re.IGNORECASE)


def sdist_folder(project: str) -> Path:
    """The project's sdist, fetched once and unpacked under the work folder."""
    requirement, _, _ = SDISTS[project]
    target = WORK / "sdists" / project
    if not target.is_dir():
        folder = WORK / "sdists"
        folder.mkdir(parents=True, exist_ok=True)
        name = requirement.split("==")[0]
        found = sorted(folder.glob(f"{name}-*.tar.gz"))
        if not found:
            # only the project itself from source: its build tools (Cython, ...) come as wheels, not compiled here
            subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", name,
                            requirement, "-d", str(folder)], check=True)
            found = sorted(folder.glob(f"{name}-*.tar.gz"))
        with tarfile.open(found[0]) as tf:
            tf.extractall(target, filter="data")
    return next(target.iterdir())


def question_of(heading: str) -> str | None:
    """The question a heading asks, or None: "Is X?" as written, "How to X" as "How do I X?"."""
    h = " ".join(_ROLE.sub(r"\1", heading).split()).strip()
    if h.endswith("?") and 3 <= len(h.split()) <= 24:
        return h
    m = _HOW_TO.match(h)
    return f"How do I {m.group(1).rstrip('.')}?" if m and len(h.split()) <= 20 else None


def sections(text: str, markdown: bool = False) -> tuple[str, list[tuple[str, str]]]:
    """A page's title and its sections as (heading, own text without subsections): Markdown as
    groundbot ingests it (storage/ingestion/loaders.py), reStructuredText parsed with docutils (Sphinx's roles
    and directives it does not know are left out or kept as text; the page's title is its first
    section's, which the document-order walk meets before any subsection)."""
    if markdown:
        from storage.ingestion.loaders import markdown_sections

        title, secs = markdown_sections(text)
        return title, [(s.heading.split(" > ")[-1], " ".join(s.text.split())) for s in secs]
    from docutils import nodes
    from docutils.core import publish_doctree

    settings = {"report_level": 5, "halt_level": 5, "warning_stream": False, "file_insertion_enabled": False,
                "raw_enabled": False}
    tree = publish_doctree(text, settings_overrides=settings)
    out: list[tuple[str, str]] = []
    for sec in tree.findall(nodes.section):
        if not sec.children or not isinstance(sec[0], nodes.title):
            continue
        body = " ".join(c.astext() for c in sec.children[1:]
                        if not isinstance(c, nodes.section | nodes.system_message | nodes.comment))
        out.append((sec[0].astext(), " ".join(_ROLE.sub(r"\1", body).split())))
    return (out[0][0] if out else tree.get("title") or ""), out


def _overlap(question: str, text: str) -> int:
    q = set(content_terms(question))
    return len(q & set(content_terms(text)))


def _pair(question: str, title: str, section: tuple[str, str], with_heading: bool, label: int, key: str,
          kind: str) -> ReaderPair:
    heading, body = section
    return ReaderPair(question, title, heading if with_heading else "", chunk_texts(title, body, heading)[0], label,
                      "howto", key, kind)


def page_pairs(project: str, key: str, text: str, markdown: bool = False) -> list[ReaderPair]:
    title, secs = sections(text, markdown)
    title = f"{project.capitalize()}: {title}" if title else project.capitalize()
    usable = [(h, b) for h, b in secs if len(b.split()) >= MIN_WORDS]
    out: list[ReaderPair] = []
    for i, (heading, _) in enumerate(usable):
        question = question_of(heading)
        if question is None:
            continue
        others = sorted((j for j in range(len(usable)) if j != i), key=lambda j: (-_overlap(question, usable[j][1]), j))[:2]
        with_heading = split_of("howto-heading:" + question, 0, HEADING_SHARE) == "test"
        out.append(_pair(question, title, usable[i], with_heading, 1, key, "the section the heading asks"))
        out += [_pair(question, title, usable[j], with_heading, 0, key, "another section of the same page") for j in others]
    return out


def build(split: str, limit: int | None = None) -> list[ReaderPair]:
    out: list[ReaderPair] = []
    for project in SDISTS:
        root = sdist_folder(project) / SDISTS[project][2]
        for path in sorted(root.rglob("*")):
            rel = path.relative_to(root).as_posix()
            if path.suffix not in (".rst", ".txt", ".md") or any(s in rel.lower() for s in SKIP):
                continue
            key = f"howto:{project}:{rel}"
            if split_of(key) != split:  # the page's split, before it is parsed
                continue
            out += page_pairs(project, key, path.read_text(encoding="utf-8", errors="replace"), path.suffix == ".md")
            if limit and len(out) >= limit:
                return out
    return out
