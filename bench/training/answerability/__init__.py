"""The answerability judge (storage/models/answerability.onnx): `python -m bench.training.answerability.train`."""
