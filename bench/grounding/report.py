"""Console and Markdown reports of the grounding benchmark."""

from __future__ import annotations

import argparse
import datetime as dt
import shlex
import subprocess
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench import ROOT
from bench.grounding.harness import PassResult, SuiteResult
from bench.grounding.real import FIGURES
from bench.history import record
from bot.config import Config

# the metrics of issue 3, in table order; a suite shows the ones that apply to it
METRICS = ("n", "hallucination_pass_through", "false_refusal_rate", "balanced_accuracy", "answered_with_gold",
           "answer_rate", "refusal_rate_unanswerable", "refusal_rate_out_of_kb", "recall_at_1", "recall_at_5")

# each suite's headline figures, kept in bench/results/history.csv as "<suite>.<metric>"
HEADLINE: dict[str, tuple[str, ...]] = {
    "docs": ("headings_answered_from_section", "paraphrases_answered_from_section",
             "paraphrases_answered_from_section_dev", "paraphrases_answered_from_section_test",
             "paraphrases_led_by_section", "off_docs_refused", "suggestions_refused_when_asked"),
    "squad_extractive": ("answered_with_gold", "refusal_rate_unanswerable", "refusal_rate_out_of_kb"),
    "squad_replay": ("hallucination_pass_through", "false_refusal_rate"),
    "clapnq_extractive": ("answered", "answered_dev", "answered_test", "unanswerable_refused",
                          "unanswerable_refused_dev", "unanswerable_refused_test"),
    "parsinlu": ("answered_with_gold", "out_of_kb_refused", "in_kb_unanswerable_refused"),
    "mixed": ("fa_answerable_with_gold", "en_answerable_with_gold", "fa_out_of_kb_replied", "en_out_of_kb_replied"),
    "halueval": ("hallucination_pass_through", "false_refusal_rate", "false_refusal_rate_right_template",
                 "false_refusal_rate_right_sentence"),
    "clapnq_llm": ("right_delivered_dev", "right_delivered_test", "right_held", "added_reaches_user",
                   "swapped_reaches_user_test", "other_blocked_test"),
    "expertqa": ("complete_delivered_dev", "complete_delivered_test", "partial_kept_out_dev", "partial_kept_out_test",
                 "uncited_kept_out_test"),
    "conversations": ("docs_first_from_section", "docs_follow_ups_from_section_dev", "docs_follow_ups_from_section_test",
                      "docs_follow_ups_repeating_previous_right", "mtrag_answerable_from_reference_dev",
                      "mtrag_answerable_from_reference_test", "mtrag_answerable_follow_ups_from_reference_test",
                      "mtrag_unanswerable_refused_dev", "mtrag_unanswerable_refused_test",
                      "mtrag_underspecified_refused_dev", "mtrag_underspecified_refused_test",
                      "mtrag_underspecified_asked_back_right", "peer_last_top1", "peer_glued_top1", "peer_last_two_top1",
                      "peer_last_two_top5", "canard_resolver_f1", "canard_resolver_left_alone",
                      "mtrag_rewrites_resolver_f1"),
    "loose": ("docs_first_from_section_dev", "docs_first_from_section_test", "docs_follow_ups_from_section_dev",
              "docs_follow_ups_from_section_test", "docs_new_from_section", "starlette_answerable_right_dev",
              "starlette_answerable_right_test", "starlette_answerable_from_page_dev",
              "starlette_answerable_from_page_test", "starlette_unanswerable_refused_dev",
              "starlette_unanswerable_refused_test", "peer_page_top1_dev", "peer_page_top1_test"),
}

# the suites each documented command asks, by the name of its result file (bench/results/<name>.json)
NAMED_RUNS = {
    "grounding-extractive": ("docs", "squad_extractive", "clapnq_extractive", "parsinlu", "mixed"),
    "grounding-expertqa-clapnq": ("expertqa", "clapnq_llm"),
}


def _counts(c: Counter[str]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(c.items(), key=lambda kv: (-kv[1], kv[0]))) or "-"


def _ms(p: PassResult) -> float:
    return 1000 * p.seconds / p.n if p.n else 0.0


def breakdown(res: SuiteResult) -> dict[str, int]:
    """Flat per-pass counts for the JSON: replied, refusals by reason and by stage; for passes
    whose rows carry a split, also the routes and the reasons of each split."""
    out: dict[str, int] = {}
    for p in res.passes:
        out[f"{p.name}.replied"] = p.replied
        out[f"{p.name}.refused"] = p.refused
        for code, n in sorted(p.reasons().items()):
            out[f"{p.name}.reason.{code}"] = n
        for stage, n in sorted(p.stages().items()):
            out[f"{p.name}.stage.{stage}"] = n
        out |= _split_breakdown(p)
    return out


def _split_breakdown(p: PassResult) -> dict[str, int]:
    splits = sorted({r.split for r in p.rows if r.split})
    if not splits:
        return {}
    out = {f"{p.name}.route.{route}": n for route, n in sorted(Counter(r.decision.route for r in p.rows).items())}
    for split in splits:
        reasons = Counter(r.decision.refusal_reason for r in p.rows if r.split == split and r.decision.refused)
        out |= {f"{p.name}.{split}.reason.{code}": n for code, n in sorted(reasons.items())}
    return out


def print_suite(res: SuiteResult) -> None:
    """Per-suite summary on stdout: notes, metrics, and the per-reason breakdown of every pass."""
    if res.skipped:
        print(f"SKIP {res.name}: {res.skipped}", flush=True)
        return
    print(f"-- {res.name}: {res.seconds:.1f}s (ingest {res.ingest_seconds:.1f}s)")
    for note in res.notes:
        print(f"   note: {note}")
    if res.tables:
        print("\n".join("   " + line for line in res.tables))
    else:
        print("   " + "  ".join(f"{k}={v}" for k, v in res.metrics.items()))
    for p in res.passes:
        print(f"   pass {p.name} (expect {p.expected}): n={p.n} replied={p.replied} refused={p.refused} "
              f"{_ms(p):.1f} ms/question")
        print(f"      refusal reasons: {_counts(p.reasons())}")
        print(f"      refusal stages:  {_counts(p.stages())}")
    sys.stdout.flush()


def _fmt(v: float | int | None) -> str:
    if v is None:
        return "–"
    return str(v) if isinstance(v, int) else f"{v:.3f}"


def _rel(path: str) -> str:
    root = ROOT
    try:
        return str(Path(path).resolve().relative_to(root)) if path else ""
    except ValueError:
        return path


def provenance(root: Path) -> str:
    """Git commit of the measured code, and uncommitted changes in groundbot's folders and config.toml."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True,
                              timeout=10, check=True).stdout.strip()
        paths = ["core", "bot", "storage", "models", "adapters", "config.toml"]
        dirty = subprocess.run(["git", "status", "--porcelain", "--", *paths],
                               cwd=root, capture_output=True, text=True, timeout=10, check=True).stdout.split("\n")
    except (OSError, subprocess.SubprocessError):
        return "code: not a git checkout"
    changed = sorted(line[3:] for line in dirty if line.strip())
    return f"code: commit {head}" + (f" plus uncommitted changes in {', '.join(changed)}" if changed else " (clean)")


def markdown(results: Sequence[SuiteResult], config: Config, args: argparse.Namespace, total: float,
             code: str = "") -> str:
    ran = [r for r in results if not r.skipped]
    cols = [m for m in METRICS if any(m in r.metrics for r in ran)]
    cmd = " ".join(shlex.quote(a) for a in sys.argv[1:]) if sys.argv and sys.argv[0].endswith(("grounding/__main__.py", "grounding/run.py")) else ""
    lines = [
        "# Grounding benchmark",
        "",
        f"`{' '.join(['python -m bench.grounding', cmd]).strip()}` — {dt.date.today().isoformat()}, "
        f"total {total:.0f}s; config `{_rel(config.source_path) or 'built-in defaults'}`, "
        f"split `{args.split}`, seed {args.seed}; {code or provenance(ROOT)}.",
        "",
        "| suite | " + " | ".join(cols) + " | seconds |",
        "|---|" + "---:|" * (len(cols) + 1),
    ]
    for r in ran:
        lines.append(f"| {r.name} | " + " | ".join(_fmt(r.metrics.get(c)) for c in cols) + f" | {r.seconds:.0f} |")
    for r in results:
        if r.skipped:
            lines += ["", f"**{r.name}: skipped** — {r.skipped}"]
            continue
        lines += ["", f"## {r.name}", ""]
        lines += [f"- {n}" for n in r.notes]
        extra = {k: v for k, v in r.metrics.items() if k not in METRICS}
        if r.tables:
            lines += ["", *r.tables, "", "All figures, per split, are in the JSON next to this file."]
        elif extra:
            lines.append("- other figures: " + ", ".join(f"{k} = {_fmt(v)}" for k, v in extra.items()))
        lines += ["", "| pass | expected | n | replied | refused | refusal reasons | refusal stage | ms/question |",
                  "|---|---|---:|---:|---:|---|---|---:|"]
        for p in r.passes:
            lines.append(f"| {p.name} | {p.expected} | {p.n} | {p.replied} | {p.refused} | {_counts(p.reasons())} "
                         f"| {_counts(p.stages())} | {_ms(p):.1f} |")
    return "\n".join(lines) + "\n"


def write_markdown(path: Path, results: Sequence[SuiteResult], config: Config, args: argparse.Namespace,
                   total: float, code: str = "") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(markdown(results, config, args, total, code), encoding="utf-8")


def result_name(suites: Sequence[str], every: Sequence[str]) -> str:
    """The result file's name for the suites asked: `grounding` for all of them, a documented
    group's name (NAMED_RUNS), else `grounding-` and the suites joined (`grounding-docs`)."""
    if set(suites) == set(every):
        return "grounding"
    named = [name for name, group in NAMED_RUNS.items() if set(group) == set(suites)]
    return named[0] if named else "grounding-" + "-".join(suites)


def headline(out: dict[str, dict[str, Any]]) -> dict[str, float]:
    """The headline figures of a run's JSON ({suite: {metric: value}}), as "<suite>.<metric>"; the
    real suite's are each project's and each split's figures (its projects are the files present)."""
    return {f"{suite}.{m}": metrics[m] for suite, metrics in out.items()
            for m in (HEADLINE.get(suite, ()) if suite != "real" else _real_headline(metrics)) if m in metrics}


def _real_headline(metrics: dict[str, Any]) -> list[str]:
    """The real suite's shares, project by project and split by split (counts stay in the JSON)."""
    return [m for m in metrics if any(m.endswith("_" + fig) for fig, _ in FIGURES)]


def record_history(path: Path, out: dict[str, dict[str, Any]], args: argparse.Namespace) -> int:
    """Append the run's headline figures to bench/results/history.csv under the result's name,
    noting the options it ran with."""
    ran = sys.argv[1:] if sys.argv and sys.argv[0].endswith(("grounding/__main__.py", "grounding/run.py")) else []
    note = " ".join(ran) or f"--suites {','.join(args.suites)}"
    return record(path.stem, headline(out), note)
