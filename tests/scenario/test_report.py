"""`groundbot report` over a real transcript database: the figures, the plots, escaped text."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from bot.cli.main import main as cli_main
from storage.records.source_state import RunCounts, SourceState
from tests.scenario.test_review_console import HOLD_AT, RISKY, Console


def test_report_counts_routes_reviews_feedback_and_gaps(make_app: Callable[..., Any], base_config: Any,
                                                         tmp_path: Path) -> None:
    review = replace(base_config.core.review, template_risk=HOLD_AT, hold_risk=HOLD_AT)
    app = make_app(config=base_config.changed(review=review))
    user, admin = Console(app, "guest", "c1"), Console(app, "local", "admin")
    user("How do I re-ingest documents?")
    user("/bad wrong it skips PDFs")
    user("What is the capital of <script>alert(1)</script> France?")
    user(RISKY)
    user(RISKY)
    items = [e.id for e in app.desk.queue.entries() if e.origin == "held"]
    admin(f"/review approve {items[0]}")
    admin(f"/review edit {items[1]} Messages hold up to 4096 characters.")
    state = SourceState(app.store.engine)
    state.record_run(RunCounts("site", 1.5, True, added=25))
    state.record_run(RunCounts("site", 0.2, False, error="the sitemap answered HTTP 503 <b>"))
    state.record_run(RunCounts("handbook", 0.4, True, updated=2, unchanged=9))
    routing = tmp_path / "routing.json"
    routing.write_text(json.dumps({"split": "test", "defaults": {"template_risk": 0.5, "hold_risk": 0.75},
                                   "at_defaults": {"right": {"reply": 0.5, "template": 0.2, "hold": 0.1, "refuse": 0.2, "n": 10}},
                                   "curve_template_at_default": [{"hold_risk": h / 10, "right_sent_to_review": 1 - h / 10,
                                                                  "hallucinated_unreviewed": h / 10} for h in range(11)]}))
    out = tmp_path / "report"
    assert cli_main(["--data-dir", str(app.config.paths.data_dir), "report", "--out", str(out),
                     "--routing", str(routing)]) == 0
    page = (out / "index.html").read_text(encoding="utf-8")
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["turns"] == 4 and summary["routes"]["hold"] == 2 and summary["answered"] == 1
    assert summary["reviewer_agreement"] == 0.5 and summary["held_decided"] == 2
    assert summary["feedback_by_reason"] == {"wrong": 1} and summary["review_status"]["open"] == 1
    assert len(summary["decision_latency_h"]) == 2 and len(summary["queue_age_h"]) == 1
    assert any("capital" in g["topic"] or "france" in g["topic"] for g in summary["gaps"])
    assert "&lt;script&gt;" in page and "<script>" not in page  # text from users is escaped
    for png in ("outcomes.png", "risk.png", "queue.png", "feedback.png", "tradeoff.png"):
        assert (out / png).stat().st_size > 1000 and f'src="{png}"' in page
    assert "HaluEval risk routing (test split" in page
    assert [(r[0], r[2], r[3], r[4]) for r in summary["syncs"]] == [("handbook", "ok", 0, 2), ("site", "FAILED", 0, 0)]
    assert "Synced sources: last sync" in page and "HTTP 503 &lt;b&gt;" in page  # each source's last sync


def _browser() -> str:
    """Debian's Chromium (scripts/test.sh installs it when run as root, as in CI); missing, the
    test fails in CI and is skipped loudly elsewhere, like the PostgreSQL variants."""
    found = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("chromium-headless-shell")
    if found is None:
        message = "Chromium not found: the report page was NOT looked at in a browser (scripts/test.sh installs it as root)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return found


@pytest.mark.browser
def test_report_page_looks_like_a_report_in_a_headless_browser(make_app: Callable[..., Any], tmp_path: Path) -> None:
    """The page as a person sees it: Chromium renders it from disk (no network: local file,
    background networking off) to a screenshot with text and the plots drawn, not a blank page."""
    browser = _browser()
    app = make_app()
    user = Console(app, "guest", "c1")
    user("How do I re-ingest documents?")
    user("What is the capital of France?")
    out = tmp_path / "report"
    assert cli_main(["--data-dir", str(app.config.paths.data_dir), "report", "--out", str(out)]) == 0
    shot = tmp_path / "report.png"
    subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
                    "--disable-background-networking", "--disable-component-update", "--disable-sync",
                    f"--user-data-dir={tmp_path / 'profile'}", f"--screenshot={shot}", "--window-size=1200,1800",
                    (out / "index.html").as_uri()], check=True, capture_output=True, timeout=180)
    from PIL import Image

    page = Image.open(shot).convert("RGB")
    assert page.size == (1200, 1800)
    colours = page.getcolors(maxcolors=1 << 20) or []
    assert len(colours) > 300, "a near-blank page"  # anti-aliased text and plotted colours
    ink = sum(n for n, rgb in colours if sum(rgb) < 600)  # pixels clearly darker than the background
    assert 0.01 < ink / (page.size[0] * page.size[1]) < 0.6
    Image.open(out / "outcomes.png").verify()  # the plot the page shows first is a valid image
