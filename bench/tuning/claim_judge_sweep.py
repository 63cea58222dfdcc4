"""The claim judge's trade-off on HaluEval QA, verifier only: how many hallucinated answers pass
and how many right answers (bare, "The answer is X.", a full sentence) are refused, for each
claim-judge floor.

    python -m bench.tuning.claim_judge_sweep                     # test split of records 0-2999
    python -m bench.tuning.claim_judge_sweep --split dev --model /tmp/claims/run3/claims.onnx

Each record's knowledge is the one cited passage (retrieval is left out: bench.grounding
measures the whole pipeline at the chosen floor), the answer goes through `verify_answer` as
the pipeline runs it for a generated answer, and the judge's scores are computed once and reused
across floors. Floor "off" is the verifier without the judge. Results:
bench/results/claim_judge_sweep.json and .md; each floor's figures appended to
bench/results/history.csv.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from bench import RESULTS
from bench.datasets import HALUEVAL_FILE, load_halueval, select_split
from bench.grounding.run import FORMS, _forms
from bench.history import record
from bot.cli.calibrate import Memo
from core.messages import Hit
from core.settings import VerifySettings
from core.verify import verify_answer
from models.claim_judge import MODEL_FILE, OnnxClaimJudge

FLOORS = (None, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7)


def passes(path: Path, split: str, limit: int | None) -> dict[str, list[tuple[str, str, str]]]:
    """(question, answer, knowledge) per pass: right, hallucinated and the restated right forms."""
    records = select_split(load_halueval(path), split)[:limit]
    out: dict[str, list[tuple[str, str, str]]] = {"right": [], "hallucinated": []} | {m: [] for m in FORMS}
    for r in records:
        out["right"].append((r.question, r.right_answer, r.knowledge))
        out["hallucinated"].append((r.question, r.hallucinated_answer, r.knowledge))
        for mode, text in _forms(r).items():
            out[mode].append((r.question, text, r.knowledge))
    return out


def replied(q: str, answer: str, knowledge: str, cfg: VerifySettings, judge: Any, floor: float | None) -> bool:
    hit = Hit(chunk_id="k", doc_id="k", source="k", title="", heading="", text=knowledge, similarity=1.0)
    v = verify_answer(answer, q, [hit], cfg, judge if floor is not None else None, floor or 0.0)
    return v.status != "REFUSE"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--halueval", type=Path, default=HALUEVAL_FILE)
    ap.add_argument("--split", choices=("dev", "test"), default="test")
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--model", type=Path, default=MODEL_FILE)
    ap.add_argument("--out", type=Path, default=RESULTS / "claim_judge_sweep.json")
    args = ap.parse_args(argv)
    t0 = time.time()
    cfg = replace(VerifySettings(), require_citations=False)
    judge = Memo(OnnxClaimJudge(args.model))
    data = passes(args.halueval, args.split, args.limit)
    table: list[dict[str, Any]] = []
    for floor in FLOORS:
        rates = {mode: sum(replied(*item, cfg, judge, floor) for item in items) / len(items)
                 for mode, items in data.items()}
        row = {"floor": "off" if floor is None else floor,
               "hallucination_pass_through": round(rates["hallucinated"], 4),
               "false_refusal_rate": round(1 - rates["right"], 4)}
        row |= {f"false_refusal_rate_{m}": round(1 - rates[m], 4) for m in FORMS}
        table.append(row)
        print(row, flush=True)
    result = {"command": "python -m bench.tuning.claim_judge_sweep " + " ".join(sys.argv[1:] if argv is None else argv), "split": args.split,
              "model": str(args.model), "n": len(data["right"]), "seconds": round(time.time() - t0), "points": table}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    head = list(table[0])
    md = [f"# Claim judge sweep (HaluEval QA {args.split} split, verifier only)", "",
          f"`{result['command']}` — {result['n']} records, {result['seconds']} s; model `{args.model.name}`", "",
          "| " + " | ".join(head) + " |", "|" + "---:|" * len(head)]
    md += ["| " + " | ".join(str(r[k]) for k in head) + " |" for r in table]
    args.out.with_suffix(".md").write_text("\n".join(md) + "\n")
    record(args.out.stem, {f"floor_{r['floor']}.{k}": r[k] for r in table
                           for k in ("hallucination_pass_through", "false_refusal_rate")},
           f"--split {args.split}, model {args.model.name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
