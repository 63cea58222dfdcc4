"""Loaders for the evaluation datasets, and writers that turn them into knowledge-base folders.

The data lives outside the project (`../shared/datasets/`, see its README); nothing here
copies it into the repository. Every selection below is deterministic.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import urllib.parse
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")

DATASETS = Path(__file__).resolve().parents[1].parent / "shared" / "datasets"
SQUAD_FILE = DATASETS / "squad2" / "dev-v2.0-articles-00-19.json"
HALUEVAL_FILE = DATASETS / "halueval-qa" / "qa_data_0000-2999.jsonl"
PARSINLU_FILE = DATASETS / "parsinlu-rc" / "dev.jsonl"
CLAPNQ_DIR = DATASETS / "clapnq-dev-half"
CLAPNQ_FILES = {"answerable": "clapnq_dev_answerable_150-299.jsonl",
                "unanswerable": "clapnq_dev_unanswerable_150-299.jsonl"}

EXPERTQA_FILE = DATASETS / "expertqa-dev" / "expertqa_dev.jsonl"
TEST_EVERY = 5  # HaluEval split: record index % TEST_EVERY == 0 -> "test", the rest -> "dev"


def sample(items: Sequence[T], limit: int | None, seed: int) -> list[T]:
    """The first `limit` items of a seeded shuffle (all items, shuffled, when limit is None)."""
    out = list(items)
    random.Random(seed).shuffle(out)
    return out if limit is None else out[: max(0, limit)]


def _slug(text: str, limit: int = 60) -> str:
    return (re.sub(r"[^\w-]+", "_", text, flags=re.UNICODE).strip("_") or "untitled")[:limit]


# -- HaluEval QA ----------------------------------------------------------------------

@dataclass(frozen=True)
class HaluRecord:
    index: int  # 0-based position among the file's non-blank lines
    knowledge: str
    question: str
    right_answer: str
    hallucinated_answer: str

    @property
    def split(self) -> str:
        return "test" if self.index % TEST_EVERY == 0 else "dev"


def load_halueval(path: Path) -> list[HaluRecord]:
    """All records of a HaluEval QA JSONL file, in file order."""
    out: list[HaluRecord] = []
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if not line.strip():
                continue
            r = json.loads(line)
            out.append(HaluRecord(len(out), r["knowledge"], r["question"], r["right_answer"], r["hallucinated_answer"]))
    return out


def parse_range(spec: str | None, total: int) -> range:
    """'START:END' (either side optional, Python slice semantics) -> range of record indices."""
    if not spec:
        return range(total)
    start_s, _, end_s = spec.partition(":")
    start = int(start_s) if start_s.strip() else 0
    end = int(end_s) if end_s.strip() else total
    return range(*slice(start, end).indices(total))


def select_split(records: Iterable[HaluRecord], split: str) -> list[HaluRecord]:
    """Records of `split` ('all', 'dev', 'test', or 'dev_unseen': the dev records the claim
    judge was not trained on, (index // 5) % 4 == 0, where its scores are not flattered)."""
    if split not in ("all", "dev", "test", "dev_unseen"):
        raise ValueError(f"unknown split {split!r}; expected all, dev, test or dev_unseen")
    if split == "dev_unseen":
        return [r for r in records if r.split == "dev" and (r.index // TEST_EVERY) % 4 == 0]
    return [r for r in records if split == "all" or r.split == split]


def write_halueval_kb(records: Sequence[HaluRecord], folder: Path) -> dict[int, str]:
    """One .txt file per record's knowledge (verbatim); returns record index -> file name."""
    folder.mkdir(parents=True, exist_ok=True)
    names: dict[int, str] = {}
    for r in records:
        name = f"{r.index:04d}.txt"
        (folder / name).write_text(r.knowledge.strip() + "\n", encoding="utf-8")
        names[r.index] = name
    return names


# -- SQuAD 2.0 ----------------------------------------------------------------------------

@dataclass(frozen=True)
class SquadQuestion:
    qid: str
    question: str
    answers: tuple[str, ...]
    is_impossible: bool
    article: int  # article index in the file
    paragraph: int  # paragraph index within the article


@dataclass
class SquadArticle:
    index: int
    title: str
    paragraphs: list[str] = field(default_factory=list)
    questions: list[SquadQuestion] = field(default_factory=list)
    kb_parity: int = 0  # 0: even-indexed articles are the KB (reported); 1: odd ones (for tuning)

    @property
    def ingested(self) -> bool:
        """Articles whose index has the KB parity form the knowledge base; the others stay outside it."""
        return self.index % 2 == self.kb_parity


def load_squad(path: Path, kb_parity: int = 0) -> list[SquadArticle]:
    """Articles of a SQuAD 2.0 JSON file (official shape); `kb_parity` picks which half is the KB."""
    data = json.loads(path.read_text(encoding="utf-8"))
    out: list[SquadArticle] = []
    for a_idx, art in enumerate(data["data"]):
        article = SquadArticle(a_idx, str(art.get("title", f"article {a_idx}")).replace("_", " "), kb_parity=kb_parity)
        for p_idx, para in enumerate(art["paragraphs"]):
            article.paragraphs.append(para["context"])
            for qa in para["qas"]:
                answers = tuple(dict.fromkeys(a["text"] for a in qa.get("answers", []) if a.get("text")))
                article.questions.append(SquadQuestion(
                    str(qa.get("id", f"{a_idx}-{p_idx}-{len(article.questions)}")), qa["question"], answers,
                    bool(qa.get("is_impossible", not answers)), a_idx, p_idx,
                ))
        out.append(article)
    return out


def squad_doc_folder(article: SquadArticle) -> str:
    return f"{article.index:02d}-{_slug(article.title)}"


def write_squad_kb(articles: Sequence[SquadArticle], folder: Path) -> dict[tuple[int, int], str]:
    """One Markdown file per paragraph (`# <article title>` + paragraph) of the ingested articles.

    Returns (article, paragraph) -> doc id as the index records it (`<folder name>/<rel path>`).
    """
    folder.mkdir(parents=True, exist_ok=True)
    doc_ids: dict[tuple[int, int], str] = {}
    for art in articles:
        if not art.ingested:
            continue
        sub = folder / squad_doc_folder(art)
        sub.mkdir(exist_ok=True)
        for p_idx, text in enumerate(art.paragraphs):
            name = f"p{p_idx:03d}.md"
            (sub / name).write_text(f"# {art.title}\n\n{text.strip()}\n", encoding="utf-8")
            doc_ids[(art.index, p_idx)] = f"{folder.name}/{sub.name}/{name}"
    return doc_ids


# -- ParsiNLU reading comprehension ---------------------------------------------------

@dataclass(frozen=True)
class ParsRecord:
    index: int
    question: str
    passage: str
    answers: tuple[str, ...]
    title: str


def _title_from_url(url: str) -> str:
    last = urllib.parse.unquote(url.rstrip("/").rsplit("/", 1)[-1]) if url else ""
    return last.replace("_", " ").strip()


def load_parsinlu(path: Path) -> list[ParsRecord]:
    """ParsiNLU RC records; `answers` are [offset, text] pairs, kept as texts."""
    out: list[ParsRecord] = []
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if not line.strip():
                continue
            r = json.loads(line)
            texts = []
            for a in r.get("answers", []):
                text = a[1] if isinstance(a, (list, tuple)) and len(a) > 1 else a
                if isinstance(text, str) and text.strip():
                    texts.append(text.strip())
            out.append(ParsRecord(len(out), r["question"], r["passage"], tuple(dict.fromkeys(texts)),
                                  _title_from_url(str(r.get("url", "")))))
    return out


def write_parsinlu_kb(records: Sequence[ParsRecord], folder: Path) -> dict[int, str]:
    """One Markdown file per distinct passage (`# <wiki title>` + passage); record index -> doc id."""
    return write_persian_kb(records, folder)


def topic_groups(records: Sequence[ParsRecord]) -> dict[int, int]:
    """Record index -> topic group: passages whose titles share a content word are one topic
    (ParsiNLU has several passages on "milk", "water" or "Persian-speaking countries"), so a
    question is never called out-of-KB while a passage on its topic is in the KB."""
    from core.text.lexicon import content_terms

    parent = list(range(len(records)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    owner: dict[str, int] = {}
    for r in records:
        title = re.sub(r"[_+\-()]|index\.php\?page=|mavara", " ", r.title)
        key = r.passage.strip()
        for term in set(content_terms(title)) | {f"passage:{hash(key)}"}:
            if term in owner:
                parent[find(r.index)] = find(owner[term])
            else:
                owner[term] = r.index
    roots: dict[int, int] = {}
    return {r.index: roots.setdefault(find(r.index), len(roots)) for r in records}


def persian_split(records: Sequence[ParsRecord], kb_parity: int) -> tuple[list[ParsRecord], list[ParsRecord]]:
    """(in-KB records, out-of-KB records): topic groups of parity `kb_parity` are the KB."""
    groups = topic_groups(records)
    inside = [r for r in records if groups[r.index] % 2 == kb_parity]
    outside = [r for r in records if groups[r.index] % 2 != kb_parity]
    return inside, outside


def without_answer(record: ParsRecord) -> str | None:
    """The passage with every sentence that holds a gold answer removed (an in-KB question whose
    answer the KB does not hold), or None when nothing of the passage would remain."""
    from core.text.normalize import normalize_text
    from core.text.sentences import split_sentences

    golds = [normalize_text(a) for a in record.answers if a.strip()]
    kept = [s for s in split_sentences(record.passage) if not any(g and g in normalize_text(s) for g in golds)]
    if not kept or len(kept) == len(split_sentences(record.passage)):
        return None
    return " ".join(kept)


def write_persian_kb(records: Sequence[ParsRecord], folder: Path, *, drop_answers: bool = False) -> dict[int, str]:
    """One Markdown file per record's passage (title heading + passage, or the passage without
    its answer sentences); record index -> doc id. Records whose passage cannot lose its answer
    and keep text are left out when `drop_answers`."""
    folder.mkdir(parents=True, exist_ok=True)
    doc_ids: dict[int, str] = {}
    seen: dict[str, str] = {}
    for r in records:
        body = without_answer(r) if drop_answers else r.passage.strip()
        if body is None:
            continue
        if body not in seen:
            name = f"{len(seen):03d}.md"
            head = f"# {r.title}\n\n" if r.title else ""
            (folder / name).write_text(f"{head}{body}\n", encoding="utf-8")
            seen[body] = f"{folder.name}/{name}"
        doc_ids[r.index] = seen[body]
    return doc_ids


# -- CLAPNQ dev half ----------------------------------------------------------------------

@dataclass(frozen=True)
class ClapRecord:
    kind: str  # "answerable" or "unanswerable" (the file it comes from)
    index: int  # 0-based position among its file's non-blank lines
    question: str
    title: str
    passage: str
    answer: str  # the long-form answer; empty for unanswerable records

    @property
    def split(self) -> str:
        """dev = odd index, test = even index (within its file)."""
        return "dev" if self.index % 2 else "test"


def clapnq_files(folder: Path) -> dict[str, Path]:
    return {kind: folder / name for kind, name in CLAPNQ_FILES.items()}


def load_clapnq(path: Path, kind: str) -> list[ClapRecord]:
    """Records of one CLAPNQ JSONL file, in file order (`passages[0]`, `output[0].answer`)."""
    out: list[ClapRecord] = []
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if not line.strip():
                continue
            r = json.loads(line)
            passage = r["passages"][0]
            answer = (r.get("output") or [{}])[0].get("answer", "") or ""
            out.append(ClapRecord(kind, len(out), r["input"], passage.get("title", ""), passage["text"],
                                  answer.strip()))
    return out


def clapnq_doc_name(r: ClapRecord) -> str:
    """File name of a record's passage: kind and index keep passages that share a title apart."""
    return f"{r.kind[0]}{r.index:03d}-{_slug(r.title)}.md"


def write_clapnq_kb(records: Sequence[ClapRecord], folder: Path) -> dict[tuple[str, int], str]:
    """One Markdown file per record's passage (`# <title>` + passage text), as write_squad_kb does.

    Returns (kind, index) -> doc id as the index records it (`<folder name>/<file name>`).
    """
    folder.mkdir(parents=True, exist_ok=True)
    doc_ids: dict[tuple[str, int], str] = {}
    for r in records:
        name = clapnq_doc_name(r)
        (folder / name).write_text(f"# {r.title}\n\n{r.passage.strip()}\n", encoding="utf-8")
        doc_ids[(r.kind, r.index)] = f"{folder.name}/{name}"
    return doc_ids


# -- ExpertQA (real LLM answers, judged claim by claim) -----------------------------------

_EVIDENCE = re.compile(r"\[(\d+)\]\s+(\S+)(?:\s*\n\n(.*))?", re.DOTALL)
_MARKER = re.compile(r"\[(\d+)\]")
COMPLETE = "Complete"
PARTIAL = frozenset({"Partial", "Incomplete"})
UNCITED = "Missing"


@dataclass(frozen=True)
class ExpertClaim:
    text: str  # the claim as it stands in the answer, with its [n] markers
    support: str  # Complete / Partial / Incomplete / Missing / N/A / "" (the expert's verdict)
    cites: tuple[int, ...]  # the [n] of the answer it cites

    @property
    def label(self) -> str:
        """complete, partial, uncited or other (N/A, no verdict): what the benchmark counts it as."""
        if self.support == COMPLETE:
            return "complete"
        if self.support in PARTIAL:
            return "partial"
        return "uncited" if self.support == UNCITED else "other"


@dataclass(frozen=True)
class ExpertRecord:
    index: int  # 0-based line of the file
    question: str
    system: str
    answer: str  # with [n] markers
    urls: dict[int, str]  # [n] -> cited URL
    excerpts: dict[int, str]  # [n] -> the excerpt the experts judged against (absent: URL only)
    claims: tuple[ExpertClaim, ...]

    @property
    def split(self) -> str:
        return expertqa_split(self.question)


def expertqa_split(question: str) -> str:
    """train / dev / test by a hash of the question (half / quarter / quarter), so an answer
    never lands in two parts and the split does not move when records are added."""
    bucket = int(hashlib.sha256(" ".join(question.split()).encode("utf-8")).hexdigest()[:8], 16) % 4
    return "train" if bucket < 2 else ("dev" if bucket == 2 else "test")


def _expert_claim(c: dict[str, object], excerpts: dict[int, str]) -> ExpertClaim:
    for e in c.get("evidence") or []:  # type: ignore[attr-defined]
        m = _EVIDENCE.match(str(e))
        if m and m.group(3) and m.group(3).strip():
            excerpts.setdefault(int(m.group(1)), m.group(3).strip())
    text = str(c.get("claim_string") or "")
    cites = tuple(dict.fromkeys(int(n) for n in _MARKER.findall(text)))
    return ExpertClaim(text, str(c.get("support") or ""), cites)


def load_expertqa(path: Path) -> list[ExpertRecord]:
    """Every answer of the ExpertQA file, in file order, with its claims and cited excerpts."""
    out: list[ExpertRecord] = []
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if not line.strip():
                continue
            r = json.loads(line)
            urls = {int(m.group(1)): m.group(2) for a in r.get("attribution") or [] if (m := _EVIDENCE.match(a))}
            excerpts: dict[int, str] = {}
            claims = tuple(_expert_claim(c, excerpts) for c in r.get("claims") or [])
            out.append(ExpertRecord(len(out), r["question"], r.get("system", ""), r.get("answer", ""), urls,
                                    excerpts, claims))
    return out


def expertqa_doc_name(r: ExpertRecord, n: int) -> str:
    return f"q{r.index:03d}-s{n}.md"


def expertqa_title(url: str) -> str:
    """A page title made from its URL, as a saved web page has: the site and its last path part."""
    parts = urllib.parse.urlsplit(url)
    last = [p for p in parts.path.split("/") if p]
    words = re.sub(r"\.\w{2,5}$", "", last[-1]) if last else ""
    words = " ".join(w for w in re.split(r"[-_+.%]+", words) if w and not w.isdigit())
    return f"{parts.netloc.removeprefix('www.')}: {words}" if words else parts.netloc.removeprefix("www.")


def write_expertqa_kb(records: Sequence[ExpertRecord], folder: Path) -> dict[tuple[int, int], str]:
    """One Markdown file per cited excerpt (`# <title from the URL>` + excerpt); the URL-only
    citations have none. Returns (record, n) -> doc id (`<folder name>/<file name>`)."""
    folder.mkdir(parents=True, exist_ok=True)
    doc_ids: dict[tuple[int, int], str] = {}
    for r in records:
        for n, text in sorted(r.excerpts.items()):
            name = expertqa_doc_name(r, n)
            (folder / name).write_text(f"# {expertqa_title(r.urls.get(n, ''))}\n\n{text}\n", encoding="utf-8")
            doc_ids[(r.index, n)] = f"{folder.name}/{name}"
    return doc_ids
