"""The passage reader (models/reader.onnx): does this chunk answer the question?

One data builder per source (boolq, quac, privacyqa, squad, clapnq, halueval), hard negatives mined
with sentence-transformers, trained with its CrossEncoder trainer: `python -m bench.training.reader`.
"""
