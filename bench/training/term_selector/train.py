"""Train the term selector: the shipped MiniLM's layers with a token-classification head
(transformers' `AutoModelForTokenClassification`, trained by transformers' `Trainer`, on which
sentence-transformers' trainers are built), positives weighted in the cross-entropy; then export to
ONNX with int8 weights, read by models/term_selector.py.

Input: the earlier words then the question, as a pair of pre-split word lists; a word's label sits
on its first word piece (the others and the question's pieces are not scored); the oldest earlier
words are cut first when a pair is longer than `max_length` word pieces.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.training.term_selector.data import TermExample

IGNORE = -100


def encode(tokenizer: Any, examples: Sequence[TermExample], max_length: int) -> Any:
    from datasets import Dataset

    tokenizer.truncation_side = "left"  # the oldest earlier words go first
    enc = tokenizer([list(e.history) for e in examples], [list(e.question) for e in examples],
                    is_split_into_words=True, truncation="only_first", max_length=max_length)
    labels: list[list[int]] = []
    for i, e in enumerate(examples):
        row, last = [], None
        for seq, word in zip(enc.sequence_ids(i), enc.word_ids(i), strict=True):
            row.append(e.labels[word] if seq == 0 and word is not None and word != last else IGNORE)
            last = word if seq == 0 else None
        labels.append(row)
    return Dataset.from_dict({"input_ids": enc["input_ids"], "attention_mask": enc["attention_mask"],
                              "token_type_ids": enc["token_type_ids"], "labels": labels})


def train(base: Path, examples: Sequence[TermExample], work: Path, *, max_length: int, epochs: float, batch: int,
          lr: float, pos_weight: float, seed: int = 0, save_steps: int = 100) -> tuple[Any, Any]:
    """(model, tokenizer) fine-tuned on the examples; resumes from the newest checkpoint under
    work/checkpoints, and returns the saved work/final when a run already finished."""
    import torch
    from transformers import (
        AutoModelForTokenClassification,
        AutoTokenizer,
        DataCollatorForTokenClassification,
        Trainer,
        TrainingArguments,
    )

    final = work / "final"
    if (final / "config.json").is_file():
        return AutoModelForTokenClassification.from_pretrained(final), AutoTokenizer.from_pretrained(final)
    tokenizer = AutoTokenizer.from_pretrained(base)
    model = AutoModelForTokenClassification.from_pretrained(base, num_labels=2)
    weights = torch.tensor([1.0, pos_weight])

    class WeightedTrainer(Trainer):  # type: ignore[misc]
        def compute_loss(self, model: Any, inputs: Any, return_outputs: bool = False, **kwargs: Any) -> Any:
            labels = inputs.pop("labels")
            outputs = model(**inputs)
            loss = torch.nn.functional.cross_entropy(outputs.logits.view(-1, 2), labels.view(-1),
                                                     weight=weights.to(outputs.logits.device), ignore_index=IGNORE)
            return (loss, outputs) if return_outputs else loss

    checkpoints = work / "checkpoints"
    args = TrainingArguments(
        output_dir=str(checkpoints), num_train_epochs=epochs, per_device_train_batch_size=batch, learning_rate=lr,
        warmup_steps=max(1, math.ceil(0.06 * epochs * len(examples) / batch)), weight_decay=0.01,
        save_strategy="steps", save_steps=save_steps, save_total_limit=2, logging_steps=25, seed=seed,
        report_to="none", use_cpu=True, disable_tqdm=True, dataloader_num_workers=0,
    )
    trainer = WeightedTrainer(model=model, args=args, train_dataset=encode(tokenizer, examples, max_length),
                              data_collator=DataCollatorForTokenClassification(tokenizer))
    resume = any(checkpoints.glob("checkpoint-*"))
    t0 = time.perf_counter()
    trainer.train(resume_from_checkpoint=True if resume else None)
    print(f"trained in {time.perf_counter() - t0:.0f} s", flush=True)
    model.save_pretrained(final)
    tokenizer.save_pretrained(final)
    return model, tokenizer


def export_onnx(model: Any, tokenizer: Any, out: Path, work: Path) -> Path:
    """The network (logits -> the probability of label 1 per word piece) to ONNX, int8 weights."""
    import onnx
    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic

    model = model.to("cpu").float().eval()

    class Probability(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            logits = self.model(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids).logits
            return torch.softmax(logits, dim=-1)[..., 1]

    enc = tokenizer([["Frank", "Zappa", "|", "When", "did", "they", "disband"]], [["why", "did", "he", "leave"]],
                    is_split_into_words=True, return_tensors="pt")
    names = ["input_ids", "attention_mask", "token_type_ids"]
    fp32 = work / (out.stem + "-fp32.onnx")
    with torch.inference_mode():
        torch.onnx.export(Probability(), tuple(enc[n] for n in names), str(fp32), input_names=names,
                          output_names=["probability"], opset_version=17, dynamo=False,
                          dynamic_axes={n: {0: "batch", 1: "tokens"} for n in names}
                          | {"probability": {0: "batch", 1: "tokens"}})
    out.parent.mkdir(parents=True, exist_ok=True)
    quantize_dynamic(str(fp32), str(out), weight_type=QuantType.QInt8,
                     extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
    print(f"exported {out} ({out.stat().st_size / 1e6:.1f} MB; fp32 {fp32.stat().st_size / 1e6:.1f} MB)", flush=True)
    return out
