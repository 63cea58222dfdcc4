"""Verifier experiments without asking again: capture what each turn handed the verifier, replay it.

    python -m bench.tuning.verify_rows capture /tmp/rows.pkl                  # expertqa, clapnq_llm, halueval --forms
    python -m bench.tuning.verify_rows replay /tmp/rows.pkl                   # today's settings, per suite and split
    python -m bench.tuning.verify_rows replay A.pkl,B.pkl --grid 0.5:0.1:0.6,0.7:0.3:0.6:0 [--judge-model F]

`capture` runs the LLM suites of the grounding benchmark (expertqa dev+test, clapnq_llm, HaluEval
dev and test with the restated forms) and keeps, for every turn that reached the verifier, its
question, generated answer and the chunks the gates kept, beside the row's labels. The file holds
third-party text: keep it outside the repository. `replay` runs the verifier, risk and routing of
today's code on those inputs, so a change to a check, a threshold or the routing is measured on
thousands of turns in a minute; turns the gates refused stay refused. A grid point's fourth field,
when given, is `[verify] anchor_ratio` (0: the anchor check off). bench.tuning.guards and
bench.tuning.routing_llm build on it.
"""

from __future__ import annotations

import argparse
import pickle
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from bench import ROOT
from bench import datasets as ds
from bench.grounding.clapnq import contains_text
from bench.grounding.expertqa import LABELS, leaked, reached
from core.gate.chain import GateResult
from core.messages import ConversationKey, Generation, Verification
from core.ports import ClaimJudge
from core.settings import CoreSettings
from core.turn.answering import VerifyStage
from core.turn.risk import Route, assess, route, template_answer
from core.verify import verify_answer


@dataclass
class Captured:
    """One asked question: its labels, and (when it reached the verifier) what the verifier read."""

    suite: str
    pass_name: str
    index: int
    split: str
    question: str
    labels: dict[str, Any]
    gate: GateResult | None = None
    generation: Generation | None = None
    language: str = "en"


@dataclass
class Outcome:
    verification: Verification | None
    route: str  # reply / template / hold / refuse
    answer: str  # what the user reads ("" when nothing)
    parts: dict[str, float] = field(default_factory=dict)


# -- capture ----------------------------------------------------------------------------------

@contextmanager
def recording() -> Iterator[dict[str, tuple[GateResult, Generation, str]]]:
    """The verify stage patched to keep (gate, generation, language) by conversation key."""
    seen: dict[str, tuple[GateResult, Generation, str]] = {}
    original = VerifyStage.__call__

    def _verify(self: VerifyStage, ctx: Any) -> Any:
        seen[ctx.msg.key.as_str()] = (ctx.gate, ctx.generation, ctx.language)
        return original(self, ctx)

    VerifyStage.__call__ = _verify  # type: ignore[method-assign]
    try:
        yield seen
    finally:
        VerifyStage.__call__ = original  # type: ignore[method-assign]


def _labels(row: Any) -> dict[str, Any]:
    keep = ("claims", "added_sentence", "swap_new", "swap_old")
    return {k: v for k, v in row.extra.items() if k in keep} | {"expected": row.expected}


CAPTURED = ("expertqa", "clapnq_llm", "halueval_dev", "halueval_test")


def capture(out: Path, halueval_dev: int, halueval_test: int | None, suites: Sequence[str] = CAPTURED) -> None:
    from bench.grounding.clapnq import run_clapnq_llm
    from bench.grounding.expertqa import run_expertqa
    from bench.grounding.run import base_config, run_halueval
    from models.embedders import make_embedder

    config = base_config(ROOT / "config.toml")
    emb = make_embedder(config.embedder.name, config.embedder.batch_size)
    rows: list[Captured] = []
    runs: dict[str, tuple[str, Callable[[], Any]]] = {
        "expertqa": ("expertqa", lambda: run_expertqa(ds.EXPERTQA_FILE, config, embedder=emb)),
        "clapnq_llm": ("clapnq_llm", lambda: run_clapnq_llm(ds.CLAPNQ_DIR, config, embedder=emb)),
        "halueval_dev": ("halueval", lambda: run_halueval(ds.HALUEVAL_FILE, config, embedder=emb, split="dev",
                                                          limit=halueval_dev, forms=True)),
        "halueval_test": ("halueval", lambda: run_halueval(ds.HALUEVAL_FILE, config, embedder=emb, split="test",
                                                           limit=halueval_test, forms=True)),
    }
    for suite, run in (runs[name] for name in suites):
        with recording() as seen:
            result = run()
        for p in result.passes:
            for r in p.rows:
                got = seen.get(ConversationKey("bench", f"{suite}:{p.name}:{r.index}").as_str())
                split = r.split or ("test" if r.index % ds.TEST_EVERY == 0 else "dev")
                rows.append(Captured(suite, p.name, r.index, split, r.question, _labels(r),
                                     *(got if got else (None, None, "en"))))
        print(f"captured {suite}: {sum(x.suite == suite for x in rows)} rows", flush=True)
        out.write_bytes(pickle.dumps(rows))


# -- replay -----------------------------------------------------------------------------------

class CachedJudge:
    """A claim judge that scores each (question, claim, evidence) once: replays that change a
    check or a threshold ask it the same pairs again."""

    def __init__(self, inner: ClaimJudge) -> None:
        self.inner = inner
        self.memo: dict[tuple[str, str, str], float] = {}

    def score(self, question: str, claims: Sequence[tuple[str, str]]) -> list[float]:
        todo = [c for c in dict.fromkeys(claims) if (question, *c) not in self.memo]
        if todo:
            for c, p in zip(todo, self.inner.score(question, todo), strict=True):
                self.memo[(question, *c)] = p
        return [self.memo[(question, *c)] for c in claims]


def as_asked(c: Captured, core: CoreSettings) -> CoreSettings:
    """The settings the turn was verified under: HaluEval's answers are replayed without [C#]
    citations, so its suite does not require them (bench.grounding.run)."""
    if c.suite == "halueval":
        return replace(core, verify=replace(core.verify, require_citations=False))
    return core


def replay_one(c: Captured, core: CoreSettings, judge: ClaimJudge | None) -> Outcome:
    """The verifier, risk and route of today's code on one captured turn (as core.turn.record does)."""
    if c.gate is None or c.generation is None:
        return Outcome(None, "refuse", "")
    core = as_asked(c, core)
    v = verify_answer(c.generation.text, c.question, c.gate.kept, core.verify, judge, core.judge.min_claim_probability)
    if v.status == "REFUSE":
        return Outcome(v, "refuse", "")
    risk = assess(v, c.gate, c.generation, v.claim_map, core.verify)
    way = route(risk.score, core.review)
    if way == Route.HOLD:
        return Outcome(v, "hold", "", risk.parts)
    if way == Route.TEMPLATE:
        text = template_answer(v.claim_map, c.gate.kept, c.language) or c.generation.text
    else:
        text = v.kept_answer or c.generation.text
    return Outcome(v, str(way), text, risk.parts)


def _rate(flags: Sequence[bool]) -> float:
    return round(sum(flags) / len(flags), 4) if flags else 0.0


def measures(rows: Sequence[Captured], outs: Sequence[Outcome]) -> dict[str, float]:
    """The acceptance figures of the three suites, per split, from replayed outcomes."""
    m: dict[str, float] = {}
    pairs = list(zip(rows, outs, strict=True))
    for split in ("dev", "test"):
        eq = [(c, o) for c, o in pairs if c.suite == "expertqa" and c.split == split]
        claims = [(cl, o.answer) for c, o in eq for cl in c.labels["claims"]]
        for label in LABELS:
            mine = [(cl, a) for cl, a in claims if cl["label"] == label]
            key = f"expertqa_{label}_{'delivered' if label == 'complete' else 'kept_out'}_{split}"
            m[key] = _rate([reached(a, cl["text"]) if label == "complete" else not leaked(a, cl["text"])
                            for cl, a in mine])
        cq = [(c, o) for c, o in pairs if c.suite == "clapnq_llm" and c.split == split]
        for name in ("right", "added", "other", "swapped"):
            got = [(c, o) for c, o in cq if c.pass_name == name]
            if name == "right":
                m[f"clapnq_right_delivered_{split}"] = _rate([bool(o.answer) for _, o in got])
                m[f"clapnq_right_held_{split}"] = _rate([o.route == "hold" for _, o in got])
            elif name == "other":
                m[f"clapnq_other_blocked_{split}"] = _rate([not o.answer for _, o in got])
            else:
                key = "added_sentence" if name == "added" else "swap_new"
                m[f"clapnq_{name}_reaches_{split}"] = _rate([bool(o.answer) and contains_text(o.answer, c.labels[key])
                                                             for c, o in got])
        he = [(c, o) for c, o in pairs if c.suite == "halueval" and c.split == split]
        for name in ("right", "right_template", "right_sentence", "hallucinated"):
            sent = [bool(o.answer) for c, o in he if c.pass_name == name]
            key = "pass_through" if name == "hallucinated" else "false_refusal"
            m[f"halueval_{name}_{key}_{split}"] = _rate([x != (name != "hallucinated") for x in sent])
    return m


class _Unpickler(pickle.Unpickler):
    """Rows captured with `python -m` name their class in __main__: read them from this module."""

    def find_class(self, module: str, name: str) -> Any:
        return Captured if name == "Captured" else super().find_class(module, name)


def load_all(paths: str) -> list[Captured]:
    """The rows of several captured files, comma-separated."""
    return [r for f in paths.split(",") if f for r in load(Path(f))]


def load(path: Path) -> list[Captured]:
    with path.open("rb") as fh:
        rows: list[Captured] = _Unpickler(fh).load()
    for c in rows:  # the claims' text is what the measures match on
        for cl in c.labels.get("claims", []):
            cl.setdefault("text", "")
    return rows


def default_core(config_file: Path = ROOT / "config.toml",
                 model: Path | None = None) -> tuple[CoreSettings, ClaimJudge | None]:
    """The settings of `config_file` and its claim judge (or the judge exported to `model`)."""
    from bench.grounding.run import base_config
    from bot.app import make_claim_judge

    config = base_config(config_file)
    if model is None:
        judge = make_claim_judge(config.changed(generator__kind="openai"), config.embedder.name)  # as the LLM suites run
    else:  # the exported judge asked for, instead of the shipped one
        from models.claim_judge import OnnxClaimJudge

        judge = OnnxClaimJudge(model, threads=config.core.judge.threads)
    return config.core, CachedJudge(judge) if judge is not None else None


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.tuning.verify_rows", description=__doc__.split("\n")[0])
    p.add_argument("action", choices=("capture", "replay"))
    p.add_argument("rows", help="the captured rows (pickle; third-party text: keep it outside the repo); "
                                "replay reads several, comma-separated")
    p.add_argument("--halueval-dev", type=int, default=300, help="HaluEval dev records asked per pass (capture)")
    p.add_argument("--halueval-test", type=int, default=None, help="HaluEval test records per pass (capture; all)")
    p.add_argument("--suites", default=",".join(CAPTURED), help=f"what capture asks (default: {','.join(CAPTURED)})")
    p.add_argument("--config", type=Path, default=ROOT / "config.toml", help="settings replayed (default config.toml)")
    p.add_argument("--judge-model", type=Path, default=None, help="a claim judge's ONNX file to replay instead of the shipped one")
    p.add_argument("--grid", default="", help="replay each PARA:FLOOR:HOLD[:ANCHOR] (min_paraphrase_probability, "
                                              "min_claim_probability, hold_risk, anchor_ratio: 0 turns the anchor "
                                              "check off), comma-separated, one line each")
    args = p.parse_args(argv)
    if args.action == "capture":
        capture(Path(args.rows), args.halueval_dev, args.halueval_test, [s for s in args.suites.split(",") if s])
        return 0
    rows = load_all(args.rows)
    core, judge = default_core(args.config, args.judge_model)
    if args.grid:
        for point in args.grid.split(","):
            para, floor, hold, *anchor = (float(x) for x in point.split(":"))
            verify = replace(core.verify, min_paraphrase_probability=para,
                             anchor_ratio=anchor[0] if anchor else core.verify.anchor_ratio)
            c = replace(core, verify=verify,
                        judge=replace(core.judge, min_claim_probability=floor), review=replace(core.review, hold_risk=hold))
            m = measures(rows, [replay_one(r, c, judge) for r in rows])
            print(f"{point} " + " ".join(f"{k}={v:.3f}" for k, v in m.items()), flush=True)
        return 0
    outs = [replay_one(c, core, judge) for c in rows]
    for k, v in measures(rows, outs).items():
        print(f"{k:48s} {v:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
