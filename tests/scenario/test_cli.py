"""`groundbot` as a newcomer runs it: a real subprocess against a temporary data dir."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from core.profiles import parse_profile

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def data_dir(tmp_path: Path, docs_index: Path) -> Path:
    shutil.copytree(docs_index, tmp_path / "data" / "index")
    return tmp_path / "data"


def groundbot(*args: str, stdin: str = "", data_dir: Path,
              env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "bot.cli.main", "--data-dir", str(data_dir), *args], input=stdin,
                          capture_output=True, text=True, cwd=ROOT, timeout=180,
                          env={**os.environ, "HF_HUB_OFFLINE": "1", **(env or {})})


@pytest.mark.slow
def test_ask_json_answers_refuses_and_is_deterministic(data_dir: Path) -> None:
    questions = "How do I re-ingest documents?\nWhat is the capital of Mars?\n\nHow do I re-ingest documents?\n"
    out = groundbot("ask", "-", "--json", stdin=questions, data_dir=data_dir)
    assert out.returncode == 0, out.stderr
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    assert len(rows) == 4  # one decision per input line, so output line n answers input line n
    answer, mars, blank, again = rows
    assert blank["refused"] and blank["refusal_reason"] == "INPUT_REJECTED" and blank["recorded"] == "database"
    for key in ("answer", "refused", "refusal_reason", "status", "reasons", "sources", "suggestions", "scores",
                "llm_called", "latency_ms"):
        assert key in answer
    assert not answer["refused"] and answer["sources"] and "ingest" in answer["answer"]
    assert {"doc", "chunk_id", "title", "score"} <= set(answer["sources"][0])
    assert mars["refused"] and mars["refusal_reason"] in ("NO_MATCHING_SOURCE", "LOW_CONFIDENCE", "NOT_ANSWERED_BY_SOURCES")
    assert mars["llm_called"] is False and mars["answer"] == ""
    for k in ("answer", "status", "reasons", "scores", "sources", "index_version", "config_hash"):
        assert answer[k] == again[k]


@pytest.mark.slow
def test_bundled_docs_answer_a_newcomers_questions_about_groundbot(data_dir: Path) -> None:
    asked = {"What does the verifier check?": {"docs/how-it-works.md"},
             "What is a claim map?": {"docs/how-it-works.md"},
             "How do I re-ingest the knowledge base?": {"docs/ingesting.md", "docs/faq.yaml", "docs/console.md"}}
    out = groundbot("ask", "-", "--json", stdin="\n".join(asked) + "\n", data_dir=data_dir)
    assert out.returncode == 0, out.stderr
    for (question, doc), row in zip(asked.items(), map(json.loads, out.stdout.splitlines()), strict=True):
        assert not row["refused"], (question, row["refusal_reason"], row["explanation"])
        assert doc & {s["doc"] for s in row["sources"]}, (question, row["sources"])


@pytest.mark.slow
def test_single_question_plain_text_and_stats(data_dir: Path) -> None:
    out = groundbot("ask", "Which file types can groundbot ingest?", data_dir=data_dir)
    assert out.returncode == 0 and "Sources:" in out.stdout
    stats = json.loads(groundbot("stats", "--json", data_dir=data_dir).stdout)
    assert groundbot("stats", data_dir=data_dir).stdout.startswith("Turns: 1 (answered 1, refused 0)")
    assert stats["turns"] == 1 and stats["index"]["chunks"] > 0


@pytest.mark.slow
def test_ingest_reports_summary(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "a.md").write_text("# A\n\nAlpha is the first letter of the Greek alphabet, used in many formulas.\n")
    out = groundbot("ingest", str(kb), "--json", data_dir=tmp_path / "d")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["added"] == ["kb/a.md"]


def test_bad_config_is_a_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "c.toml"
    bad.write_text("[gates]\nnope = 1\n")
    out = groundbot("--config", str(bad), "stats", data_dir=tmp_path)
    assert out.returncode == 2 and "unknown setting" in out.stderr


@pytest.mark.slow
def test_calibrate_prints_tradeoff_and_writes_plot(data_dir: Path, tmp_path: Path) -> None:
    eval_file = tmp_path / "eval.jsonl"
    rows = [
        {"question": "How do I re-ingest documents?", "expected": "answer"},
        {"question": "What is the capital of Mars?", "expected": "refuse"},
        {"question": "How do I re-ingest documents?", "expected": "refuse",
         "answer": "Re-ingest runs every 5 minutes on its own [C1]."},
    ]
    eval_file.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    png = tmp_path / "curve.png"
    profile = tmp_path / "profile.json"
    out = groundbot("calibrate", str(eval_file), "--plot", str(png), "--top1", "0.3:0.5:0.1",
                    "--support", "0.4:0.6:0.2", "--write-profile", str(profile), data_dir=data_dir)
    assert out.returncode == 0, out.stderr
    written = parse_profile(json.loads(profile.read_text()), str(profile))
    assert written.embedder == "minilm" and set(written.values) == {"gates", "extractive", "refusal"}
    assert f"min_quote_similarity = {written.values['extractive']['min_quote_similarity']}" in out.stdout
    assert "recommended: [gates] min_top1_similarity" in out.stdout
    assert "pass-through 0.000" in out.stdout  # the wrong number (5 minutes) is never answered
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.slow
def test_calibrate_sweeps_the_claim_judge_floor(data_dir: Path, tmp_path: Path) -> None:
    """With --judge the claim judge's floor is a grid axis for replayed (generated) answers: the
    real judge reads a right answer quoted from the docs; at floor 0 the lexical checks let it
    through, at floor 1.0 no probability the judge gives reaches it, so the answer is refused."""
    eval_file = tmp_path / "eval.jsonl"
    right = ("Run `groundbot ingest` again with the same paths, or type `/reingest` as an admin in the console or "
             "Telegram (`/groundbot-reingest` in Slack). Only new or changed documents are embedded again, and "
             "deleted documents are removed from the index. [C1]")
    rows = [{"question": "How do I re-ingest documents?", "expected": "answer", "answer": right},
            {"question": "What is the capital of Mars?", "expected": "refuse", "answer": "Olympus Mons [C1]."}]
    eval_file.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    out = groundbot("calibrate", str(eval_file), "--plot", str(tmp_path / "c.png"), "--top1", "0.4:0.4:0.1",
                    "--support", "0.7:0.7:0.1", "--judge", "0.0:1.0:1.0", data_dir=data_dir,
                    env={"GROUNDBOT_GENERATOR__KIND": "openai"})  # the app runs the claim judge for generated answers
    assert out.returncode == 0, out.stderr
    assert "changes nothing here" not in out.stderr
    table = {line.split()[2]: line.split()[3:5] for line in out.stdout.splitlines()
             if line.strip().startswith("0.40")}
    assert table["0.00"] == ["0.000", "0.000"] and table["1.00"] == ["0.000", "1.000"]
    assert "[judge] min_claim_probability = 0.0" in out.stdout


@pytest.mark.slow
def test_calibrate_says_when_the_judge_axis_changes_nothing(data_dir: Path, tmp_path: Path) -> None:
    """Quoted answers are not judged claim by claim: --judge says so instead of printing a flat axis silently."""
    eval_file = tmp_path / "eval.jsonl"
    eval_file.write_text(json.dumps({"question": "How do I re-ingest documents?", "expected": "answer"}) + "\n")
    out = groundbot("calibrate", str(eval_file), "--plot", str(tmp_path / "c.png"), "--top1", "0.4:0.4:0.1",
                    "--support", "0.7:0.7:0.1", "--judge", "0.0:1.0:1.0", data_dir=data_dir)
    assert out.returncode == 0, out.stderr
    assert "changes nothing here" in out.stderr
