"""The claim judge (models/claims.onnx): its training pairs (data.py) and training
(`python -m bench.training.claim_judge.train`)."""
