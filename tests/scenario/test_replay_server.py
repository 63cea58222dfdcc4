"""The benchmark's replay LLM server, through the real `openai` client and the real pipeline."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import openai
import pytest

from bench.datasets import HALUEVAL_FILE
from bench.grounding.replay_server import NOT_IN_CONTEXT, ReplayServer
from bench.grounding.run import base_config, main, run_halueval
from core.messages import Hit
from models.openai_generator import OpenAIGenerator, build_messages

ROOT = Path(__file__).resolve().parents[2]
Q = "Which magazine was started first?"


def _hit() -> Hit:
    return Hit("c1", "d1", "s", "Magazines", "", "Arthur's Magazine was started in 1844.", 0.9)


def test_real_openai_client_gets_the_mapped_answer() -> None:
    with ReplayServer({Q: {"right": "Arthur's Magazine", "hallucinated": "First for Women"}}) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="not-needed", timeout=2.0, max_retries=0)
        resp = client.chat.completions.create(model="replay", messages=build_messages(Q, [_hit()]),  # type: ignore[arg-type]
                                              temperature=0, logprobs=True)
        assert resp.object == "chat.completion"
        assert resp.choices[0].message.content == "Arthur's Magazine" and resp.choices[0].logprobs is None
        server.set_mode("hallucinated")
        gen = OpenAIGenerator(client, "replay").generate(Q, [_hit()])
        assert gen.text == "First for Women" and gen.llm_called and gen.confidence is None and not gen.error
        unknown = OpenAIGenerator(client, "replay").generate("Something nobody asked?", [_hit()])
        assert unknown.text == "" and not unknown.error  # NOT_IN_CONTEXT -> empty answer
        assert server.requests == 3 and server.misses == 1
    assert NOT_IN_CONTEXT == "NOT_IN_CONTEXT"


@pytest.mark.skipif(not HALUEVAL_FILE.is_file(), reason=f"HaluEval data not found at {HALUEVAL_FILE}")
def test_halueval_suite_end_to_end_on_five_records(embedder: Any, tmp_path: Path) -> None:
    rows: list[dict[str, Any]] = []
    res = run_halueval(HALUEVAL_FILE, base_config(ROOT / "config.toml"), embedder=embedder, limit=5,
                       records="0:25", dump=rows.append)
    assert not res.skipped and res.metrics["n"] == 5
    assert [p.name for p in res.passes] == ["right", "hallucinated"] and all(p.n == 5 for p in res.passes)
    for key in ("hallucination_pass_through", "false_refusal_rate", "balanced_accuracy"):
        assert 0.0 <= res.metrics[key] <= 1.0
    assert len(rows) == 10 and {r["index"] for r in rows} == {0, 5, 10, 15, 20}  # the test split
    assert any(r["llm_called"] for r in rows)  # the answers came through the openai client
    assert any("require_citations=False" in n for n in res.notes)


def test_cli_skips_a_missing_dataset_cleanly(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "g.json"
    assert main(["--suites", "halueval", "--halueval", str(tmp_path / "absent.jsonl"), "--out", str(out)]) == 0
    assert json.loads(out.read_text()) == {}
    assert "SKIP halueval" in capsys.readouterr().out and "skipped" in out.with_suffix(".md").read_text()
