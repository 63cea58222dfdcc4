"""Claim-judge pairs from ExpertQA: real LLM claims against the excerpt an expert judged them on.

Split by question (bench.datasets.expertqa_split) before any claim is read: the train part
trains, the dev and test parts are held out (the grounding benchmark's expertqa suite asks
them). A claim the expert found fully supported by its cited excerpts is 1 (Complete), a
partially supported one 0 (Partial, Incomplete); claims without evidence (Missing), without a
verdict or citing a URL with no excerpt are skipped. Licence: MIT (Malaviya et al., NAACL 2024).
"""

from __future__ import annotations

import re
from pathlib import Path

from bench.datasets import EXPERTQA_FILE, expertqa_title, load_expertqa
from bench.training.claim_judge.data import pair
from bench.training.sources import Example
from core.text.sentences import split_sentences

_MARKER = re.compile(r"\s*\[\d+\]")


def expertqa_examples(path: Path = EXPERTQA_FILE, parts: tuple[str, ...] = ("train", "dev", "test")) -> list[Example]:
    """(question, claim, its cited excerpts) pairs of the answers in `parts`; held = not train."""
    out: list[Example] = []
    for r in load_expertqa(path):
        if r.split not in parts:
            continue
        for c in r.claims:
            if c.label not in ("complete", "partial") or not c.cites or not all(n in r.excerpts for n in c.cites):
                continue
            sentences = [s for n in c.cites for s in split_sentences(r.excerpts[n])]
            title = expertqa_title(r.urls.get(c.cites[0], ""))
            claim = " ".join(_MARKER.sub("", c.text).split())
            out.append(pair(r.question, claim, sentences, int(c.label == "complete"), "expertqa",
                            f"{c.label}_{r.split}", r.split != "train", title))
    return out
