"""How many questions people really asked carry a question mark: `python -m bench.system.asks_marked`.

A channel set to answer "questions" without a mention answers only messages with a question mark
(core/messages.py: asks_something); this counts, on questions nobody here wrote, how many such a
channel would answer: the real-question projects (issue threads), MTRAG-UN's first user turns and
CANARD's questions. Writes bench/results/asks-marked.json and a row per figure to the history.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from bench.datasets import DATASETS
from bench.history import record
from core.messages import asks_something

RESULTS = Path(__file__).resolve().parents[1] / "results" / "asks-marked.json"


def _real() -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for path in sorted((DATASETS / "real-questions").glob("*.jsonl")):
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        out[f"real-{path.stem}"] = [str(r["question"]) for r in rows]
    return out


def _mtrag_first_turns() -> list[str]:
    path = DATASETS / "mtrag-un-dev" / "mtrag_un_dev.jsonl"
    firsts = []
    for line in path.read_text(encoding="utf-8").splitlines():
        turns = json.loads(line).get("input") or []
        users = [t for t in turns if isinstance(t, dict) and t.get("speaker") == "user"]
        if users:
            firsts.append(str(users[0].get("text") or ""))
    return firsts


def _canard() -> list[str]:
    rows = json.loads((DATASETS / "canard-dev" / "dev.json").read_text(encoding="utf-8"))
    return [str(r["Question"]) for r in rows]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.system.asks_marked", description=__doc__)
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args(argv)
    sets = {**_real(), "mtrag-un-first-turns": _mtrag_first_turns(), "canard-questions": _canard()}
    result = {name: {"n": len(texts), "marked": sum(asks_something(t) for t in texts),
                     "share": round(sum(asks_something(t) for t in texts) / len(texts), 3) if texts else 0.0}
              for name, texts in sets.items()}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    record(args.out.stem, {f"{name}.share": r["share"] for name, r in result.items()}, "question mark share")
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
