"""Claim-judge pairs from FEVER: Wikipedia claims against one evidence sentence.

- FEVER NLI (`fever-nli-dev`): entailment (1) / not (0); split by a hash of the claim before
  parsing (one in ten held out), and no claim that FEVER-Symmetric's held-out file holds is
  trained on.
- FEVER-Symmetric (`fever-symmetric`): minimal pairs, the same claim against evidence edited
  to flip the verdict; SUPPORTS (1) / REFUTES (0); the dev file trains, the test file is held out.

Licence: CC BY-SA 3.0 (Thorne et al., NAACL 2018; Schuster et al., EMNLP 2019).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from bench.datasets import DATASETS
from bench.training.claim_judge.data import pair
from bench.training.sources import Example
from core.text.sentences import split_sentences

NLI_FILE = DATASETS / "fever-nli-dev" / "fever_nli_dev.jsonl"
SYMMETRIC = DATASETS / "fever-symmetric"


def _clean(text: str) -> str:
    """FEVER's tokenised text back to prose: "Edmonds , Tracey" -> "Edmonds, Tracey"."""
    for a, b in ((" ,", ","), (" .", "."), (" ;", ";"), (" :", ":"), ("-LRB- ", "("), (" -RRB-", ")"),
                 ("-LSB- ", "["), (" -RSB-", "]"),
                 ("`` ", '"'), (" ''", '"'), (" 's", "'s")):
        text = text.replace(a, b)
    return " ".join(text.split())


def _key(claim: str) -> str:
    return " ".join(_clean(claim).lower().split()).rstrip(".")


def held_by_hash(claim: str, every: int = 10) -> bool:
    return int(hashlib.sha256(_key(claim).encode("utf-8")).hexdigest()[:8], 16) % every == 0


def _lines(path: Path) -> list[dict[str, str]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def symmetric_examples(folder: Path = SYMMETRIC) -> list[Example]:
    out: list[Example] = []
    for name, held in (("fever_symmetric_dev.jsonl", False), ("fever_symmetric_test.jsonl", True)):
        for r in _lines(folder / name):
            y = int(r["gold_label"] == "SUPPORTS")
            out.append(pair("", _clean(r["claim"]), split_sentences(_clean(r["evidence"])), y, "fever_symmetric",
                            r["gold_label"].lower(), held))
    return out


def nli_examples(path: Path = NLI_FILE, folder: Path = SYMMETRIC, limit: int | None = None) -> list[Example]:
    """FEVER NLI pairs; the held-out tenth by claim hash; claims of FEVER-Symmetric's test file never trained on."""
    test_claims = {_key(r["claim"]) for r in _lines(folder / "fever_symmetric_test.jsonl")}
    out: list[Example] = []
    for r in _lines(path):
        held = held_by_hash(r["claim"])
        if not held and _key(r["claim"]) in test_claims:
            continue
        y = int(r["label"] == "entailment")
        out.append(pair("", _clean(r["claim"]), split_sentences(_clean(r["evidence"])), y, "fever_nli", r["label"], held))
        if limit is not None and len(out) >= limit:
            break
    return out
