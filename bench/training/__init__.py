"""The training of the models groundbot ships, one package per model: answerability/ (the
answerability judge, storage/models/answerability.onnx), claim_judge/ (the claim judge,
storage/models/claims.onnx), support_model/ (the logistic claim-support model,
core/verify/model.json). sources.py and cross_encoder.py hold what the two judges share."""
