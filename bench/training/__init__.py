"""The training of the models groundbot ships, one package per model: claim_judge/ (the claim
judge, models/claims.onnx), reader/ (the passage reader, models/reader.onnx),
support_model/ (the logistic claim-support model, core/verify/model.json). The trainer beside
them: pair_model.py (sentence-transformers' CrossEncoder trainer, for the claim judge and the
reader); sources.py holds the data readers they share."""
