"""Sweeps that chose shipped settings: risk routing (routing, routing_clapnq), the two judges'
thresholds (answerability_sweep, claim_judge_sweep) and the ANN index type (ann_variants)."""
