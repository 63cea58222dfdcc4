"""Sweeps that chose shipped settings: risk routing (routing, routing_clapnq), the claim
judge's threshold (claim_judge_sweep) and the ANN index type (ann_variants)."""
