"""The training of the models groundbot ships, one package per model: claim_judge/ (the claim
judge, storage/models/claims.onnx), reader/ (the passage reader, storage/models/reader.onnx),
support_model/ (the logistic claim-support model, core/verify/model.json). The trainers beside
them: cross_encoder.py (the claim judge's network and loop) and pair_model.py (sentence-transformers'
CrossEncoder trainer, the reader's); sources.py holds the data readers they share."""
