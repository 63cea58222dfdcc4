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

import shutil
import sys
import time
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any

from bench.grounding.harness import Dump, PassResult, Row, SuiteResult, ask, ingest_kb, temp_app
from bench.grounding.loose import page_file, peer_page_ranks, site_pages
from bench.real_sets import HOME, MARKDOWN, SETS, RealRow, in_section, load_rows, split_of
from bench.real_sets import projects as real_projects
from bot.app import App
from bot.config import Config
from core.messages import Decision

NAME = "real"
QUESTIONS = SETS
RealQuestion = RealRow
CURVE = tuple(round(0.05 * i, 2) for i in range(21))  # reader thresholds the per-project curves are read at


def load_project(path: Path) -> list[RealQuestion]:
    """The rows of one project's question file; a malformed row raises ValueError naming it."""
    return load_rows(path)


def projects(questions: Path = QUESTIONS, sites: Path | None = None) -> list[tuple[str, Path]]:
    """(project, docs folder) of every question file whose docs are present: dev, test, then train."""
    if sites is None:
        return [(name, docs) for name, _q, docs in real_projects(questions)]
    found = [(p.stem, sites / f"{p.stem}-docs") for p in sorted(questions.glob("*.jsonl"))]
    order = {"dev": 0, "test": 1, "train": 2}
    return sorted([f for f in found if f[1].is_dir()], key=lambda f: (order[split_of(f[0])], f[0]))


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


def in_gold_section(page: str, heading: str, title: str, q: RealQuestion) -> bool:
    """A chunk of `page` under `heading` lies in a section the row points to (a row that names no
    section counts the whole gold page)."""
    for i, gold in enumerate(q.gold_pages):
        if page != gold:
            continue
        sections = q.gold_sections
        section = sections[i] if i < len(sections) else (sections[0] if sections else "")
        if not section or in_section(heading, title, section):
            return True
    return False


def score(d: Decision, q: RealQuestion, kb: str) -> dict[str, Any]:
    """`right`: an answerable question replied citing a gold page; a not-in-docs one refused.
    `led`: the reply's first source is a gold page. `section`: the reply's first source (what it
    quotes first) lies in the gold section. `posted`: the reply meets the unprompted bar."""
    ordered = sorted(d.sources, key=lambda s: s.number)
    cited = [page_of(s.doc_id, kb) for s in ordered]
    best = d.scores.get("reader_best")
    out: dict[str, Any] = {"cited": cited, "posted": not d.refused and d.unprompted,
                           "reader_best": None if best is None else float(best)}
    if not q.answerable:
        return out | {"right": d.refused, "led": None, "section": None}
    from_gold = not d.refused and any(p in q.gold_pages for p in cited)
    first = ordered[0] if ordered and not d.refused else None
    section = first is not None and in_gold_section(cited[0], first.heading, first.title, q)
    return out | {"right": from_gold, "led": first is not None and cited[0] in q.gold_pages, "section": section}


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
           ("section_right", "answerable: quoted first from the gold section"),
           ("replied", "answerable: replied at all"),
           ("led_by_gold", "answerable: first source a gold page"),
           ("not_in_docs_refused", "not in the docs: refused"),
           ("unprompted_right", "unprompted: answerable posted citing a gold page"),
           ("unprompted_section_right", "unprompted: answerable posted from the gold section"),
           ("unprompted_not_in_docs_posted", "unprompted: not in the docs posted"),
           ("peer_top1", "peer (plain MiniLM): a gold page top-1"),
           ("peer_top5", "peer (plain MiniLM): a gold page in the top 5"))


def tally(m: dict[str, Any], key: str, rows: Sequence[Row], ranks: Sequence[int | None]) -> None:
    """A project's (or a split's) figures under `key`: `<key><figure>` a share, with `_right` and `_n`."""
    counted: dict[str, list[bool]] = {
        "answered_from_gold": [r.extra["right"] for r in rows if r.expected == "reply"],
        "section_right": [bool(r.extra["section"]) for r in rows if r.expected == "reply"],
        "unprompted_right": [r.extra["posted"] and r.extra["right"] for r in rows if r.expected == "reply"],
        "unprompted_section_right": [r.extra["posted"] and bool(r.extra["section"]) for r in rows if r.expected == "reply"],
        "unprompted_not_in_docs_posted": [r.extra["posted"] for r in rows if r.expected == "refuse"],
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


def curve(rows: Sequence[Row]) -> list[dict[str, Any]]:
    """As the reader's threshold moves: answerable questions answered from the gold section (and
    from a gold page), and not-in-docs questions answered, counting a question answered at `t` when
    the run replied and its best chunk's probability reaches `t` (exact at and above the run's own
    floor; below it, run with a lower `[reader] min_answer_probability`)."""
    out = []
    for t in CURVE:
        def at(r: Row, t: float = t) -> bool:
            best = r.extra.get("reader_best")
            return r.replied and (best is None or best >= t)

        ans = [r for r in rows if r.expected == "reply"]
        nid = [r for r in rows if r.expected == "refuse"]
        section = sum(1 for r in ans if at(r) and r.extra["section"])
        page = sum(1 for r in ans if at(r) and r.extra["right"])
        wrong = sum(1 for r in ans if at(r) and not r.extra["right"])
        posted_nid = sum(1 for r in nid if at(r))
        answered = sum(1 for r in ans if at(r)) + posted_nid
        out.append({"threshold": t, "answerable": len(ans), "not_in_docs": len(nid),
                    "answered_from_gold_section": section, "answered_citing_gold_page": page,
                    "answerable_answered_wrong_page": wrong, "not_in_docs_answered": posted_nid,
                    "precision_page": round(page / answered, 4) if answered else None,
                    "precision_section": round(section / answered, 4) if answered else None})
    return out


def run_real(config: Config, *, embedder: Any = None, limit: int | None = None, dump: Dump | None = None,
             questions: Path = QUESTIONS, sites: Path | None = None, splits: Sequence[str] = ("dev", "test")) -> SuiteResult:
    """Every project of `splits` whose question file and docs are present; `limit` caps the questions
    per project. The per-project curves go to `result.curves`."""
    t0 = time.perf_counter()
    result = SuiteResult(NAME)
    cfg = config.changed(generator__kind="extractive")
    found = [(p, d) for p, d in projects(questions, sites) if split_of(p) in splits]
    if not found:
        result.skipped = f"no <project>.jsonl in {questions} with its <project>-docs snapshot (python -m bench.grounding.snapshots)"
        return result
    every: list[Row] = []
    ranks_by_split: dict[str, list[int | None]] = {s: [] for s in splits}
    keys: list[tuple[str, str]] = []
    ingest = 0.0
    curves: dict[str, list[dict[str, Any]]] = {}
    for project, docs in found:
        asked = load_project(questions / f"{project}.jsonl")[:limit]
        kb = f"{project}-docs"
        split = split_of(project)
        with temp_app(cfg, embedder=embedder, prefix=f"{NAME}-{project}") as app:
            folder = app.config.paths.data_dir.parent / kb
            pages = write_kb(docs, folder)
            ingest_kb(app, folder, result)
            ingest += result.ingest_seconds
            result.notes.append(f"{project} ({split}): {len(pages)} pages of {docs.name}, "
                                f"{sum(q.answerable for q in asked)} answerable and "
                                f"{sum(not q.answerable for q in asked)} not-in-docs questions")
            rows = run_project(app, project, kb, asked, result, dump)
            ranks = peer(app, kb, asked)
        tally(result.metrics, f"{project}_", rows, ranks)
        keys.append((f"{project}_", f"{project} ({split})"))
        curves[project] = curve(rows)
        every += rows
        ranks_by_split[split] += ranks
    for split in splits:
        chosen = [r for r in every if r.split == split]
        if chosen:
            tally(result.metrics, f"{split}_", chosen, ranks_by_split[split])
            keys.append((f"{split}_", f"all {split}"))
            curves[f"all {split}"] = curve(chosen)
    result.metrics["n"] = len(every)
    result.ingest_seconds = ingest
    result.tables = _tables(result.metrics, keys)
    result.curves = curves
    result.notes.append("generator=extractive; a reply is right when it cites a gold page, from the section when its "
                        "first source lies in the gold section; unprompted: replies that meet [reader] "
                        "unprompted_probability; peer: the question alone against every section chunk, a page "
                        "scoring its best chunk, never refusing")
    result.seconds = time.perf_counter() - t0
    return result
