"""Follow-up questions with a person's rewrite into a question of its own: CANARD's dev set and
MTRAG's human rewrites (`../shared/datasets/`, read in place). The follow-up resolution figures of
the conversations suite and the term selector's training read them from here, split one way:
by conversation, so no dialogue is both trained on and measured.

Public sources, for someone without `../shared`: CANARD (Elgohary et al., EMNLP 2019; CC BY-SA
4.0), its dev.json as released; MTRAG (IBM/mt-rag-benchmark, Apache-2.0), the human retrieval
tasks' `questions`, `lastturn`, `rewrite` and `qrels` files of its four collections.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from bench.datasets import DATASETS
from core.messages import PriorTurn
from core.text.normalize import normalize_text

CANARD_FILE = DATASETS / "canard-dev" / "dev.json"
MTRAG_REWRITES_DIR = DATASETS / "mtrag-rewrites"
MTRAG_COLLECTIONS = ("clapnq", "cloud", "fiqa", "govt")
_USER = "|user|: "
SPLITS = ("train", "dev", "test")


def split_of(conversation: str) -> str:
    """sha256(conversation) % 10: 0 -> test (never trained on or tuned on), 1 -> dev, else train."""
    k = int(hashlib.sha256(conversation.encode("utf-8")).hexdigest(), 16) % 10
    return "test" if k == 0 else "dev" if k == 1 else "train"


@dataclass(frozen=True)
class Rewrite:
    id: str
    question: str
    rewrite: str  # the human rewrite into a standalone question
    prior: tuple[tuple[str, str], ...]  # the earlier turns as (question, answer), oldest first
    follow_up: bool = True  # an earlier question was asked (CANARD: not the dialogue's first question)
    conversation: str = ""
    topic: str = ""  # CANARD: "article title > section title", what the dialogue is about

    @property
    def unchanged(self) -> bool:
        """The human rewrite is the question itself (it needs nothing from the earlier turns)."""
        return _plain(self.rewrite) == _plain(self.question)

    @property
    def split(self) -> str:
        return split_of(self.conversation or self.id)


def _plain(text: str) -> str:
    return normalize_text(text).strip(" ?!.")


def load_canard(path: Path = CANARD_FILE) -> list[Rewrite]:
    """CANARD records; History = [article title, section title, q1, a1, q2, a2, ...]; the titles
    are the first prior turn (as the resolution figures always read them) and the `topic`."""
    out: list[Rewrite] = []
    for r in json.loads(path.read_text(encoding="utf-8")):
        h = [str(x) for x in r["History"]]
        pairs = [(h[i], h[i + 1] if i + 1 < len(h) else "") for i in range(2, len(h), 2)]
        topic = [(h[0], h[1] if len(h) > 1 else "")] if h else []
        out.append(Rewrite(f"{r['QuAC_dialog_id']}#{r['Question_no']}", r["Question"], r["Rewrite"],
                           tuple(topic + pairs), follow_up=bool(pairs), conversation=str(r["QuAC_dialog_id"]),
                           topic=" > ".join(x for x in h[:2] if x)))
    return out


def _jsonl(path: Path) -> dict[str, str]:
    rows = (json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip())
    return {r["_id"]: r["text"] for r in rows}


def _user_turns(text: str) -> list[str]:
    return [t.strip() for t in ("\n" + text).split("\n" + _USER) if t.strip()]


def load_mtrag_rewrites(folder: Path = MTRAG_REWRITES_DIR) -> list[Rewrite]:
    """MTRAG's turns: the last question (`lastturn`), its human rewrite, and the earlier user
    questions (the glued `questions` text without its last turn); no answers are given."""
    out: list[Rewrite] = []
    for c in MTRAG_COLLECTIONS:
        glued = _jsonl(folder / f"{c}_questions.jsonl")
        last = _jsonl(folder / f"{c}_lastturn.jsonl")
        rewrite = _jsonl(folder / f"{c}_rewrite.jsonl")
        for k in sorted(last, key=lambda x: (x.split("<::>")[0], int(x.split("<::>")[-1]))):
            earlier = _user_turns(glued.get(k, ""))[:-1]
            out.append(Rewrite(f"{c}:{k}", last[k].removeprefix(_USER).strip(),
                               rewrite.get(k, last[k]).removeprefix(_USER).strip(), tuple((q, "") for q in earlier),
                               follow_up=bool(earlier), conversation=f"{c}:{k.split('<::>')[0]}"))
    return out


def mtrag_qrels(folder: Path = MTRAG_REWRITES_DIR) -> dict[str, set[str]]:
    """Rewrite id (as `load_mtrag_rewrites` names it) -> the corpus ids of the passages it should retrieve."""
    out: dict[str, set[str]] = {}
    for c in MTRAG_COLLECTIONS:
        lines = (folder / f"{c}_qrels.tsv").read_text(encoding="utf-8").splitlines()[1:]
        for line in lines:
            query, corpus, *_ = line.split("\t")
            out.setdefault(f"{c}:{query}", set()).add(corpus)
    return out


def prior_turns(r: Rewrite) -> list[PriorTurn]:
    """The earlier turns as groundbot's PriorTurn: CANARD's article and section title as the section
    every answer came from (groundbot's earlier turns carry the section that answered them)."""
    if r.topic:  # CANARD: the first prior pair is (article title, section title)
        return [PriorTurn(q, a, section=r.topic) for q, a in r.prior[1:]] or [PriorTurn("", "", section=r.topic)]
    return [PriorTurn(q, a) for q, a in r.prior]
