"""Ingestion against LanceDB on disk: every format, incremental re-ingest, crash safety."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from core.messages import ConversationKey, Incoming
from core.text.normalize import normalize_text

ROOT = Path(__file__).resolve().parents[2]


def minimal_pdf(text: str) -> bytes:
    """A one-page PDF with one line of text (enough for pypdf to extract)."""
    stream = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode()
    objs = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length " + str(len(stream)).encode() + b" >>\nstream\n" + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for i, obj in enumerate(objs, start=1):
        offsets.append(len(out))
        out += f"{i} 0 obj\n".encode() + obj + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objs) + 1}\n0000000000 65535 f \n".encode()
    for off in offsets:
        out += f"{off:010d} 00000 n \n".encode()
    out += f"trailer\n<< /Size {len(objs) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)


def write_kb(root: Path) -> Path:
    kb = root / "kb"
    kb.mkdir()
    (kb / "guide.md").write_text("# Widget guide\n\n## Cleaning\n\nClean the widget with a dry cloth every 30 days.\n\n"
                                 "## Storage\n\nStore the widget below 25 degrees in its blue box.\n")
    (kb / "notes.txt").write_text("The warranty of the widget lasts 24 months from the date of purchase.\n")
    (kb / "page.html").write_text(
        "<html><head><title>Widget recall</title><link rel='canonical' href='https://example.org/recall'></head>"
        "<body><nav>menu junk</nav><h1>Widget recall</h1><h2>Affected batches</h2>"
        "<p>Batches 7 and 9 of the widget are recalled because of a loose hinge.</p><script>var x=1;</script></body></html>")
    (kb / "manual.pdf").write_bytes(minimal_pdf("The widget battery charges fully in 90 minutes."))
    (kb / "faq.csv").write_text("question,answer\nCan the widget get wet?,No. The widget is not waterproof.\n")
    (kb / "faq2.jsonl").write_text(json.dumps({"question": "What colour is the widget?", "answer": "The widget is orange."}) + "\n")
    (kb / "faq3.yaml").write_text("- question: Who makes the widget?\n  answer: The widget is made by Acme Tools.\n")
    (kb / "broken.bin.txt").write_bytes(b"\x00\x01\x02binary")
    (kb / ".hidden.md").write_text("secret draft")
    return kb


def search(app: Any, text: str, k: int = 5) -> list[Any]:
    q = normalize_text(text)
    return app.index.search(q, app.embedder.embed_queries([q])[0], k)


def test_every_format_is_ingested_and_answerable(make_app: Callable[..., Any], tmp_path: Path) -> None:
    app = make_app(empty=True)
    kb = write_kb(tmp_path)
    summary = app.ingest([kb])
    assert sorted(summary.added) == sorted(
        f"kb/{n}" for n in ["guide.md", "notes.txt", "page.html", "manual.pdf", "faq.csv", "faq2.jsonl", "faq3.yaml"])
    assert [p for p, _ in summary.skipped] == ["kb/broken.bin.txt"]
    top = search(app, "how long does the battery take to charge")[0]
    assert top.doc_id == "kb/manual.pdf" and "90 minutes" in top.text and top.heading == "page 1"
    recall = search(app, "which batches are recalled")[0]
    assert recall.url == "https://example.org/recall" and "menu junk" not in recall.text and "var x" not in recall.text
    assert recall.heading == "Affected batches" and recall.title == "Widget recall"
    faq = search(app, "is the widget waterproof")[0]
    assert faq.kind == "faq" and faq.faq_answer == "No. The widget is not waterproof."
    d = app.ask(Incoming(ConversationKey("t", "1"), "u", "Can the widget get wet?"))
    assert not d.refused and d.answer.startswith("No. The widget is not waterproof.")


def test_reingest_is_incremental_and_removes_deleted(make_app: Callable[..., Any], tmp_path: Path) -> None:
    app = make_app(empty=True)
    kb = write_kb(tmp_path)
    first = app.ingest([kb])
    assert first.chunks_written > 0
    again = app.ingest([kb])
    assert again.added == again.updated == again.removed == [] and again.chunks_written == 0
    assert len(again.unchanged) == len(first.added)
    (kb / "notes.txt").write_text("The warranty of the widget lasts 36 months from the date of purchase.\n")
    (kb / "page.html").unlink()
    third = app.ingest([kb])
    assert third.updated == ["kb/notes.txt"] and third.removed == ["kb/page.html"] and third.added == []
    texts = [h.text for h in search(app, "warranty months", 10)]
    assert any("36 months" in t for t in texts) and not any("24 months" in t for t in texts)
    assert not any(h.doc_id == "kb/page.html" for h in search(app, "which batches are recalled", 10))
    d = app.ask(Incoming(ConversationKey("t", "2"), "u", "Which batches of the widget are recalled?"))
    assert d.refused or all(s.doc_id != "kb/page.html" for s in d.sources)


def test_other_roots_are_left_alone(make_app: Callable[..., Any], tmp_path: Path) -> None:
    app = make_app()  # holds the bundled docs
    before = app.index.count()
    kb = write_kb(tmp_path)
    app.ingest([kb])
    (kb / "notes.txt").unlink()
    summary = app.ingest([kb])
    assert summary.removed == ["kb/notes.txt"]
    assert any(h.doc_id.startswith("docs/") for h in search(app, "How do I re-ingest documents?"))
    assert app.index.count() > before


@pytest.mark.slow
def test_killed_ingest_leaves_previous_index_searchable(make_app: Callable[..., Any], tmp_path: Path) -> None:
    app = make_app()  # bundled docs already ingested
    version, count = app.index.version(), app.index.count()
    big = tmp_path / "big"
    big.mkdir()
    for i in range(400):
        (big / f"doc{i}.md").write_text(f"# Topic {i}\n\n" + f"Paragraph about subject {i} and its details. " * 30)
    script = (
        "import sys; from bot.config import load_config; from bot.app import build_app\n"
        "cfg = load_config(sys.argv[1], data_dir=sys.argv[2], environ={})\n"
        "app = build_app(cfg)\n"
        "def progress(phase, done, total):\n"
        "    print('progress', done, total, flush=True)\n"
        "app.ingest([sys.argv[3]], progress=progress)\n"
        "print('finished', flush=True)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", script, str(ROOT / "config.toml"), str(app.config.paths.data_dir), str(big)],
                            stdout=subprocess.PIPE, text=True, cwd=ROOT, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert proc.stdout is not None
    deadline = time.time() + 120
    line = ""
    while time.time() < deadline:
        line = proc.stdout.readline()
        if line.startswith("progress") or not line:
            break
    assert line.startswith("progress"), "ingest never started"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    fresh = make_app(config=app.config)  # a new process view of the same data dir
    assert fresh.index.version() == version and fresh.index.count() == count
    d = fresh.ask(Incoming(ConversationKey("t", "k"), "u", "How do I re-ingest documents?"))
    assert not d.refused and d.sources


@pytest.mark.slow
def test_first_run_ingests_the_configured_kb_once(make_app: Callable[..., Any]) -> None:
    app = make_app(empty=True, paths__kb_paths=(str(ROOT / "docs"),))
    first = app.ensure_ingested()
    assert first is not None and first.added and app.index.count() > 0
    assert app.ensure_ingested() is None  # a filled index is left alone
