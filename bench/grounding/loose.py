"""The loose suite of the grounding benchmark: questions typed as people chat ("can it use gpt-4
instead?", "does this work w/ slack threads"), not in the documents' words, asked through the
real pipeline (`App.ask`) with the default extractive generator.

- `docs conversations, asked loosely`: groundbot's docs (docs/, ingested as the docs suite ingests
  them) and the conversations of bench/grounding/docs_conversations_loose.yaml, played turn by
  turn as the conversations suite plays its docs conversations (one ConversationKey each) and
  scored the same way: first questions, follow-ups and self-contained later questions answered
  from the section meant.
- `starlette-docs`: Starlette's documentation website (../shared/sites/starlette-docs), its 25
  pages as listed in its sitemap, each page's HTML file ingested through groundbot's HTML loader
  (a KB folder of `<page>/index.html` files, so a page is cited by its path), and the loose first
  questions of bench/grounding/starlette_questions.yaml, each in a conversation of its own:
  answerable ones are right when the reply cites the page meant, and its section where one is
  named; the ones the site does not answer are right when refused.
- peer: a plain MiniLM that never refuses (the embedder groundbot uses, cosine against each page's
  ingested chunk vectors, a page scoring its best chunk): is the page meant its top-1 / top-5?

Dev and test as marked in the two files (test never for tuning).
"""

from __future__ import annotations

import shutil
import sys
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import numpy as np
import yaml

from bench import ROOT
from bench.grounding.conversations import (
    SPLIT_HEAD,
    docs_conversation_rows,
    load_docs_conversations,
    passage_scores,
    peer_ranks,
    put,
    run_docs_conversations,
    split_row,
)
from bench.grounding.docs_suite import DOCS, _leaf
from bench.grounding.harness import Dump, PassResult, Row, SuiteResult, ask, ingest_kb, temp_app
from bot.app import App
from bot.config import Config
from core.messages import Decision, Source
from core.text.normalize import normalize_text

NAME = "loose"
DOCS_LOOSE = Path(__file__).with_name("docs_conversations_loose.yaml")
STARLETTE_QUESTIONS = Path(__file__).with_name("starlette_questions.yaml")
STARLETTE_SITE = ROOT.parent / "shared" / "sites" / "starlette-docs"
SITE_KB = "starlette-docs"  # the KB folder's name: a page's doc_id is "starlette-docs/<page>index.html"
HOME = "/"  # the page path of the site's home page (index.html)
SPLITS = ("dev", "test")
_SITEMAP_NS = "{http://www.sitemaps.org/schemas/sitemap/0.9}"


# -- the questions file and the site (pure) ---------------------------------------------------

@dataclass(frozen=True)
class SiteQuestion:
    ask: str
    split: str
    answerable: bool = True
    page: str = ""     # the page that answers it ("routing/", HOME); '' when the site does not
    heading: str = ""  # the section of that page that answers it, where one does


def load_site_questions(path: Path = STARLETTE_QUESTIONS) -> list[SiteQuestion]:
    """The questions of starlette_questions.yaml; a malformed entry raises ValueError."""
    data = yaml.safe_load(path.read_text("utf-8"))
    out: list[SiteQuestion] = []
    for i, q in enumerate(data["questions"]):
        text = str(q.get("ask") or "").strip()
        where = f"question {i + 1} ({text!r})"
        if not text:
            raise ValueError(f"{where}: no ask")
        if q.get("split") not in SPLITS:
            raise ValueError(f"{where}: split must be dev or test, not {q.get('split')!r}")
        answerable = q.get("answerable", True)
        if not isinstance(answerable, bool):
            raise ValueError(f"{where}: answerable must be true or false")
        page, heading = str(q.get("page") or ""), str(q.get("heading") or "")
        if answerable and not page:
            raise ValueError(f"{where}: an answerable question names its page")
        if not answerable and (page or heading):
            raise ValueError(f"{where}: a question the site does not answer names no page")
        out.append(SiteQuestion(text, q["split"], answerable, page, heading))
    asks = [normalize_text(q.ask) for q in out]
    if len(set(asks)) != len(asks):
        raise ValueError("questions repeat")
    return out


def page_path(url: str) -> str:
    """A sitemap URL's page path: 'https://www.starlette.io/routing/' -> 'routing/', the home page -> HOME."""
    path = urlsplit(url).path.lstrip("/")
    return path or HOME


def page_file(site: Path, page: str) -> Path:
    """The HTML file of a page of the site: 'routing/' -> site/routing/index.html, HOME -> site/index.html."""
    return site / ("" if page == HOME else page) / "index.html"


def site_pages(site: Path = STARLETTE_SITE) -> list[str]:
    """The page paths the site's sitemap.xml lists, in its order."""
    root = ET.parse(site / "sitemap.xml").getroot()
    return [page_path((loc.text or "").strip()) for loc in root.iter(f"{_SITEMAP_NS}loc")]


def write_site_kb(site: Path, folder: Path) -> list[str]:
    """Copy each sitemap page's HTML file into `folder` under its page path (the home page as
    folder/index.html); returns the page paths. Nothing else of the site (assets, 404 page, search
    index, theme partials) is copied."""
    pages = site_pages(site)
    for page in pages:
        target = page_file(folder, page)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(page_file(site, page), target)
    return pages


def page_of(doc_id: str) -> str:
    """The page path of a chunk or source of the site's KB: 'starlette-docs/routing/index.html' ->
    'routing/', 'starlette-docs/index.html' -> HOME; '' for anything else."""
    prefix = f"{SITE_KB}/"
    if not doc_id.startswith(prefix) or not doc_id.endswith("index.html"):
        return ""
    rest = doc_id[len(prefix):-len("index.html")]
    return rest or HOME


def cites_page(sources: Sequence[Source], page: str, heading: str = "") -> bool:
    """One of `sources` is from the page (and, with a heading, from that section of it)."""
    return any(page_of(s.doc_id) == page and (not heading or _leaf(s.heading) == _leaf(heading)) for s in sources)


def score_site_question(d: Decision, q: SiteQuestion) -> dict[str, Any]:
    """`right`: an answerable question replied citing its page, and its section where one is
    named; a question the site does not answer refused. Also, for answerable ones: `from_page`,
    `from_section` (None where no section is named) and `led` (its first source is the page)."""
    if not q.answerable:
        return {"right": d.refused, "from_page": None, "from_section": None, "led": None, "cited": []}
    from_page = not d.refused and cites_page(d.sources, q.page)
    from_section = (not d.refused and cites_page(d.sources, q.page, q.heading)) if q.heading else None
    first = sorted(d.sources, key=lambda s: s.number)[:1]
    return {"right": from_page and from_section is not False, "from_page": from_page, "from_section": from_section,
            "led": not d.refused and cites_page(first, q.page),
            "cited": [f"{page_of(s.doc_id) or s.doc_id} / {_leaf(s.heading)}" for s in d.sources]}


def _row_split(r: Row) -> str:
    return r.split


# -- the passes -------------------------------------------------------------------------------

def run_site_questions(app: App, questions: Sequence[SiteQuestion], result: SuiteResult, dump: Dump | None) -> None:
    """Each question as the first question of a conversation of its own; rows go to two passes."""
    answerable, refuse = PassResult("starlette_answerable", "reply"), PassResult("starlette_unanswerable", "refuse")
    for i, q in enumerate(questions):
        t0 = time.perf_counter()
        target = answerable if q.answerable else refuse
        d = ask(app, NAME, target.name, i, q.ask)
        target.seconds += time.perf_counter() - t0
        row = Row(NAME, target.name, i, q.ask, target.expected, d, split=q.split,
                  gold_doc=f"{q.page} / {q.heading}" if q.page else "",
                  extra={"page": q.page, "heading": q.heading, "retrieval_query": d.retrieval_query,
                         **score_site_question(d, q)})
        target.rows.append(row)
        if dump:
            dump(row.to_json())
    print(f"  [{NAME}/starlette] {len(questions)}/{len(questions)}", file=sys.stderr, flush=True)
    result.passes += [answerable, refuse]
    m = result.metrics
    rows = answerable.rows
    put(m, "starlette_answerable_right", rows, lambda r: r.extra["right"], _row_split)
    put(m, "starlette_answerable_from_page", rows, lambda r: r.extra["from_page"], _row_split)
    put(m, "starlette_answerable_from_section", [r for r in rows if r.extra["from_section"] is not None],
        lambda r: r.extra["from_section"], _row_split)
    put(m, "starlette_answerable_led_by_page", rows, lambda r: r.extra["led"], _row_split)
    put(m, "starlette_answerable_replied", rows, lambda r: r.replied, _row_split)
    put(m, "starlette_unanswerable_refused", refuse.rows, lambda r: r.extra["right"], _row_split)


def page_matrix(app: App, page: Callable[[str], str] = page_of) -> tuple[list[str], np.ndarray]:
    """(page of each chunk, unit vectors): every section chunk whose doc_id `page` names a page of,
    read from the chunk index (what groundbot searches)."""
    tbl = app.index.table()
    got = tbl.search().where("kind = 'doc'").select(["doc_id", "vector"]).limit(None).to_arrow()
    col = got.column("vector").combine_chunks()
    vecs = np.asarray(col.flatten().to_numpy(zero_copy_only=False), dtype=np.float32).reshape(len(col), -1)
    pages = [page(x) for x in got.column("doc_id").to_pylist()]
    keep = [i for i, p in enumerate(pages) if p]
    return [pages[i] for i in keep], vecs[keep]


def peer_page_ranks(app: App, asks: Sequence[str], gold: Sequence[frozenset[str]],
                    page: Callable[[str], str] = page_of) -> tuple[list[int | None], int, int]:
    """A plain MiniLM that never refuses: each question's best-ranked gold page's rank among all
    pages (a page scoring its best section chunk), and how many chunks and pages it ranked."""
    chunk_pages, vecs = page_matrix(app, page)
    pages = sorted(set(chunk_pages))
    at = {p: i for i, p in enumerate(pages)}
    owner = np.asarray([at[p] for p in chunk_pages])
    qs = app.embedder.embed_queries([normalize_text(a) for a in asks])
    return peer_ranks(passage_scores(qs @ vecs.T, owner, len(pages)), pages, gold), len(chunk_pages), len(pages)


def run_site_peer(app: App, questions: Sequence[SiteQuestion], result: SuiteResult) -> None:
    """A plain MiniLM that never refuses: is the page meant its top-1 / top-5 of all pages?"""
    asked = [q for q in questions if q.answerable]
    if not asked:
        return
    ranks, chunks, pages = peer_page_ranks(app, [q.ask for q in asked], [frozenset([q.page]) for q in asked])
    pairs = list(zip(asked, ranks, strict=True))
    m = result.metrics
    put(m, "peer_page_top1", pairs, lambda p: p[1] == 0, lambda p: p[0].split)
    put(m, "peer_page_top5", pairs, lambda p: p[1] is not None and p[1] < 5, lambda p: p[0].split)
    result.notes.append(f"peer: plain {app.embedder.name} (no gate, no reader, never refuses), the question alone "
                        f"against {chunks} section chunks of {pages} pages (a page scores its best "
                        f"chunk); {len(asked)} answerable questions")


# -- the suite --------------------------------------------------------------------------------

def _tables(m: dict[str, Any]) -> list[str]:
    """The Markdown tables of the suite's figures (counts beside the shares)."""
    row, head = split_row(m), SPLIT_HEAD
    lines: list[str] = []
    if "docs_first_from_section_n" in m:
        lines += docs_conversation_rows(m, "**Docs conversations asked loosely** (`docs_conversations_loose.yaml`)")
    if "starlette_answerable_right_n" in m:
        lines += ["**starlette-docs, loose first questions** (`starlette_questions.yaml`)", "", *head,
                  row("answerable: replied citing the page (and the section where named)", "starlette_answerable_right"),
                  row("answerable: replied citing the page", "starlette_answerable_from_page"),
                  row("answerable, a section named: replied citing it", "starlette_answerable_from_section"),
                  row("answerable: opening with the page", "starlette_answerable_led_by_page"),
                  row("answerable: replied at all", "starlette_answerable_replied"),
                  row("not answered by the site: refused", "starlette_unanswerable_refused"), ""]
    if "peer_page_top1_n" in m:
        lines += ["**Peer: plain MiniLM, starlette-docs answerable questions**", "", *head,
                  row("the page meant top-1", "peer_page_top1"), row("the page meant in the top 5", "peer_page_top5"), ""]
    return lines


def run_loose(config: Config, *, embedder: Any = None, limit: int | None = None, dump: Dump | None = None,
              site: Path = STARLETTE_SITE) -> SuiteResult:
    """The docs conversations asked loosely, then the starlette-docs first questions with the
    peer row; `limit` caps the conversations and the questions."""
    t0 = time.perf_counter()
    result = SuiteResult(NAME)
    cfg = config.changed(generator__kind="extractive")
    conversations = load_docs_conversations(DOCS_LOOSE)[:limit]
    result.notes.append(f"generator=extractive; docs conversations asked loosely: {DOCS_LOOSE.relative_to(ROOT)} "
                        f"({len(conversations)} conversations, KB = docs/); a right answer cites the section meant")
    with temp_app(cfg, embedder=embedder, prefix=f"{NAME}-docs") as app:
        ingest_kb(app, DOCS, result)
        run_docs_conversations(app, conversations, result, dump)
    ingest_seconds = result.ingest_seconds
    if (site / "sitemap.xml").is_file():
        questions = load_site_questions()[:limit]
        with temp_app(cfg, embedder=embedder, prefix=f"{NAME}-starlette") as app:
            kb = app.config.paths.data_dir.parent / SITE_KB
            pages = write_site_kb(site, kb)
            ingest_kb(app, kb, result)
            result.notes.append(f"starlette-docs: the {len(pages)} pages of its sitemap.xml, each page's HTML file "
                                f"ingested as {SITE_KB}/<page>/index.html; questions: "
                                f"{STARLETTE_QUESTIONS.relative_to(ROOT)} ({sum(q.answerable for q in questions)} "
                                f"answerable, {sum(not q.answerable for q in questions)} not answered by the site), "
                                "each the first question of its own conversation")
            run_site_questions(app, questions, result, dump)
            run_site_peer(app, questions, result)
        ingest_seconds += result.ingest_seconds
    else:
        result.notes.append(f"starlette-docs skipped: {site / 'sitemap.xml'} not found (see ../shared/sites/README.md)")
    result.ingest_seconds = ingest_seconds
    result.metrics["n"] = sum(p.n for p in result.passes)
    result.tables = _tables(result.metrics)
    result.seconds = time.perf_counter() - t0
    return result
