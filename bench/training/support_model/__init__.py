"""The logistic claim-support model (core/verify/model.json): `python -m bench.training.support_model.train`."""
