"""The real suite of the grounding benchmark: questions people asked in real projects' issue
trackers, over that project's published docs, asked through the real pipeline (`App.ask`) with the
default extractive generator, each question the first of a conversation of its own.

A project is a question file `../shared/datasets/real-questions/<project>.jsonl` (its README says
how each was collected: the page an answerer pointed to, or `not_in_docs`) beside its docs
`../shared/sites/<project>-docs/`: a built website (a `sitemap.xml` and one `index.html` per page,
each page's HTML ingested through groundbot's HTML loader) or a folder of Markdown sources (each
file ingested as it is). A page is named as the question files name it: the site path without
its `index.html` ("routing", "index" for the home page), or the Markdown file's path without its
extension ("guide/cli").

Per project, answerable questions: answered citing a gold page / replied at all; questions the docs
do not answer: refused; and the peer rows, a plain MiniLM that never refuses (the embedder
groundbot uses, cosine against each page's ingested section chunks, a page scoring its best
chunk): a gold page at top-1 / in the top 5.

Split by project, never by row: rules and thresholds are chosen on the `DEV_PROJECTS` and
reported on the others (`test`).
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from bench import ROOT
from bench.grounding.harness import Dump, PassResult, Row, SuiteResult, ask, ingest_kb, temp_app
from bench.grounding.loose import page_file, peer_page_ranks, site_pages
from bot.app import App
from bot.config import Config
from core.messages import Decision

NAME = "real"
QUESTIONS = ROOT.parent / "shared" / "datasets" / "real-questions"
SITES = ROOT.parent / "shared" / "sites"
DEV_PROJECTS = frozenset({"starlette"})  # where rules and thresholds are chosen; every other project is held out
KINDS = ("answerable", "not_in_docs")
HOME = "index"  # a built site's home page, as the question files name it
MARKDOWN = (".md", ".mdx", ".markdown")


@dataclass(frozen=True)
class RealQuestion:
    project: str
    ask: str
    answerable: bool
    gold_pages: frozenset[str]
    source: str

    @property
    def split(self) -> str:
        return "dev" if self.project in DEV_PROJECTS else "test"


def load_project(path: Path) -> list[RealQuestion]:
    """The rows of one project's question file; a malformed row raises ValueError naming it."""
    out: list[RealQuestion] = []
    project = path.stem
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
        pages = frozenset(str(p).strip("/") or HOME for p in row.get("gold_pages") or [])
        if (kind == "answerable") != bool(pages):
            raise ValueError(f"{where}: an answerable row names its gold pages, a not_in_docs row none")
        out.append(RealQuestion(project, question, kind == "answerable", pages, str(row.get("source") or "")))
    return out


def projects(questions: Path = QUESTIONS, sites: Path = SITES) -> list[tuple[str, Path]]:
    """(project, docs folder) of every question file whose docs are present, dev projects first."""
    found = [(p.stem, sites / f"{p.stem}-docs") for p in sorted(questions.glob("*.jsonl"))]
    return sorted([f for f in found if f[1].is_dir()], key=lambda f: (f[0] not in DEV_PROJECTS, f[0]))


# -- a project's docs as a KB folder, and its pages -------------------------------------------

def write_kb(docs: Path, folder: Path) -> list[str]:
    """Copy the project's pages into `folder` (a built site's sitemap pages, or every Markdown
    file); returns the page names."""
    if (docs / "sitemap.xml").is_file():
        pages = []
        for page in site_pages(docs):
            target = page_file(folder, page)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(page_file(docs, page), target)
            pages.append(page.strip("/") or HOME)
        return pages
    pages = []
    for f in sorted(docs.rglob("*")):
        if f.is_file() and f.suffix.lower() in MARKDOWN:
            rel = f.relative_to(docs)
            target = folder / rel.with_suffix(".md")
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(f, target)
            pages.append(rel.with_suffix("").as_posix())
    return pages


def page_of(doc_id: str, kb: str) -> str:
    """The page a chunk or source of the KB folder `kb` is from: 'starlette-docs/routing/index.html'
    -> 'routing', 'starlette-docs/index.html' -> 'index', 'uvicorn-docs/deployment/docker.md' ->
    'deployment/docker'; '' for anything else."""
    prefix = f"{kb}/"
    if not doc_id.startswith(prefix):
        return ""
    rest = doc_id[len(prefix):]
    if rest == "index.html":
        return HOME
    if rest.endswith("/index.html"):
        return rest[: -len("/index.html")]
    return rest.rsplit(".", 1)[0] if "." in rest.rsplit("/", 1)[-1] else rest


def score(d: Decision, q: RealQuestion, kb: str) -> dict[str, Any]:
    """`right`: an answerable question replied citing a gold page; a not-in-docs one refused.
    `led`: the reply's first source is a gold page."""
    cited = [page_of(s.doc_id, kb) for s in sorted(d.sources, key=lambda s: s.number)]
    if not q.answerable:
        return {"right": d.refused, "led": None, "cited": cited}
    from_gold = not d.refused and any(p in q.gold_pages for p in cited)
    return {"right": from_gold, "led": not d.refused and bool(cited) and cited[0] in q.gold_pages, "cited": cited}


# -- the passes -------------------------------------------------------------------------------

def run_project(app: App, project: str, kb: str, questions: Sequence[RealQuestion], result: SuiteResult,
                dump: Dump | None) -> list[Row]:
    """Each question as the first question of a conversation of its own."""
    answerable = PassResult(f"{project}_answerable", "reply")
    refuse = PassResult(f"{project}_not_in_docs", "refuse")
    rows: list[Row] = []
    for i, q in enumerate(questions):
        t0 = time.perf_counter()
        target = answerable if q.answerable else refuse
        d = ask(app, NAME, target.name, i, q.ask)
        target.seconds += time.perf_counter() - t0
        row = Row(NAME, target.name, i, q.ask, target.expected, d, split=q.split,
                  gold_doc=", ".join(sorted(q.gold_pages)),
                  extra={"project": project, "source": q.source, "retrieval_query": d.retrieval_query,
                         **score(d, q, kb)})
        target.rows.append(row)
        rows.append(row)
        if dump:
            dump(row.to_json())
    print(f"  [{NAME}/{project}] {len(questions)}/{len(questions)}", file=sys.stderr, flush=True)
    result.passes += [answerable, refuse]
    return rows


def peer(app: App, kb: str, questions: Sequence[RealQuestion]) -> list[int | None]:
    """The plain retriever's rank of the best-ranked gold page of each answerable question."""
    asked = [q for q in questions if q.answerable]
    return peer_page_ranks(app, [q.ask for q in asked], [q.gold_pages for q in asked], partial(page_of, kb=kb))[0]


# -- tallies ------------------------------------------------------------------------------------

FIGURES = (("answered_from_gold", "answerable: replied citing a gold page"),
           ("replied", "answerable: replied at all"),
           ("led_by_gold", "answerable: first source a gold page"),
           ("not_in_docs_refused", "not in the docs: refused"),
           ("peer_top1", "peer (plain MiniLM): a gold page top-1"),
           ("peer_top5", "peer (plain MiniLM): a gold page in the top 5"))


def tally(m: dict[str, Any], key: str, rows: Sequence[Row], ranks: Sequence[int | None]) -> None:
    """A project's (or a split's) figures under `key`: `<key><figure>` a share, with `_right` and `_n`."""
    counted: dict[str, list[bool]] = {
        "answered_from_gold": [r.extra["right"] for r in rows if r.expected == "reply"],
        "replied": [r.replied for r in rows if r.expected == "reply"],
        "led_by_gold": [bool(r.extra["led"]) for r in rows if r.expected == "reply"],
        "not_in_docs_refused": [r.extra["right"] for r in rows if r.expected == "refuse"],
        "peer_top1": [k == 0 for k in ranks],
        "peer_top5": [k is not None and k < 5 for k in ranks],
    }
    for fig, hits in counted.items():
        right, n = sum(hits), len(hits)
        m[f"{key}{fig}"], m[f"{key}{fig}_right"], m[f"{key}{fig}_n"] = (round(right / n, 4) if n else 0.0), right, n


def _tables(m: dict[str, Any], keys: Sequence[tuple[str, str]]) -> list[str]:
    head = "| figure | " + " | ".join(label for _, label in keys) + " |"
    lines = ["**Real questions, by project** (each asked alone; dev projects choose, the others report)", "",
             head, "|---|" + "---:|" * len(keys)]
    for fig, label in FIGURES:
        cells = []
        for key, _ in keys:
            n = m.get(f"{key}{fig}_n", 0)
            cells.append(f"{m[f'{key}{fig}_right']}/{n}" if n else "–")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return lines + [""]


def run_real(config: Config, *, embedder: Any = None, limit: int | None = None, dump: Dump | None = None,
             questions: Path = QUESTIONS, sites: Path = SITES) -> SuiteResult:
    """Every project whose question file and docs are present; `limit` caps the questions per project."""
    t0 = time.perf_counter()
    result = SuiteResult(NAME)
    cfg = config.changed(generator__kind="extractive")
    found = projects(questions, sites)
    if not found:
        result.skipped = f"no <project>.jsonl in {questions} with its <project>-docs in {sites}"
        return result
    every: list[Row] = []
    ranks_by_split: dict[str, list[int | None]] = {"dev": [], "test": []}
    keys: list[tuple[str, str]] = []
    ingest = 0.0
    for project, docs in found:
        asked = load_project(questions / f"{project}.jsonl")[:limit]
        kb = f"{project}-docs"
        with temp_app(cfg, embedder=embedder, prefix=f"{NAME}-{project}") as app:
            folder = app.config.paths.data_dir.parent / kb
            pages = write_kb(docs, folder)
            ingest_kb(app, folder, result)
            ingest += result.ingest_seconds
            split = "dev" if project in DEV_PROJECTS else "test"
            result.notes.append(f"{project} ({split}): {len(pages)} pages of {docs.name}, "
                                f"{sum(q.answerable for q in asked)} answerable and "
                                f"{sum(not q.answerable for q in asked)} not-in-docs questions")
            rows = run_project(app, project, kb, asked, result, dump)
            ranks = peer(app, kb, asked)
        tally(result.metrics, f"{project}_", rows, ranks)
        keys.append((f"{project}_", f"{project} ({split})"))
        every += rows
        ranks_by_split[split] += ranks
    for split in ("dev", "test"):
        chosen = [r for r in every if r.split == split]
        if chosen:
            tally(result.metrics, f"{split}_", chosen, ranks_by_split[split])
            keys.append((f"{split}_", f"all {split}"))
    result.metrics["n"] = len(every)
    result.ingest_seconds = ingest
    result.tables = _tables(result.metrics, keys)
    result.notes.append("generator=extractive; a reply is right when it cites a gold page; peer: the question alone "
                        "against every section chunk, a page scoring its best chunk, never refusing")
    result.seconds = time.perf_counter() - t0
    return result
