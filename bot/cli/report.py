"""`groundbot report [--since DATE] --out DIR`: an HTML page with plots of how the bot is doing,
from the transcript database: answers and refusals by reason over time, the risk scores and
their routes, the review queue's age and decision latency, feedback by reason, reviewer
agreement, the most refused questions grouped by topic (the knowledge base's gaps), and the
HaluEval risk-routing trade-off measured by bench.tuning.routing.

Plots need matplotlib (`pip install 'groundbot[plot]'`); without it the page has the tables.
Every text from the database is HTML-escaped.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter, defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jinja2 import Environment, PackageLoader, select_autoescape

from core.reasons import FAILURES, Reason
from core.text.lexicon import content_terms

if TYPE_CHECKING:  # the database library loads when the report is built, not for --help
    from storage.records.report_data import ReportData

ROUTES = ("reply", "template", "hold")
# refusals that say nothing of what the knowledge base lacks: held answers, failures (a bug, an
# outage), a message that could not be read and a chat no scope serves (the operator's to set up)
NOT_GAPS = (Reason.NEEDS_REVIEW, *FAILURES, Reason.INPUT_REJECTED, Reason.CHAT_NOT_SET_UP)


def _utc(value: datetime) -> datetime:
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def _hours(delta_s: float) -> float:
    return round(delta_s / 3600, 2)


def summarise(data: ReportData, now: datetime) -> dict[str, Any]:
    """Every figure the page shows, computed once (tested without matplotlib)."""
    turns = data.turns
    by_day: dict[str, Counter[str]] = defaultdict(Counter)
    for t in turns:
        by_day[_utc(t["created_at"]).date().isoformat()]["answered" if not t["refused"] else t["reason"]] += 1
    held = [r for r in data.reviews if r["origin"] == "held"]
    decided = [r for r in held if r["status"] != "open"]
    drafts = {t["id"]: t["draft"] for t in turns}
    unchanged = [r for r in decided if r["status"] == "approved"
                 or (r["status"] == "faq" and r["final_answer"].strip() == drafts.get(r["turn_id"], "").strip())]
    return {
        "turns": len(turns),
        "answered": sum(1 for t in turns if not t["refused"]),
        "refused_by_reason": dict(Counter(t["reason"] for t in turns if t["refused"]).most_common()),
        "routes": dict(Counter(t["route"] or "refuse" for t in turns)),
        "by_scope": _by_scope(turns),
        "by_day": {day: dict(c) for day, c in sorted(by_day.items())},
        "risk_by_route": {r: [float(t["risk"]) for t in turns if t["route"] == r and t["risk"] is not None]
                          for r in ROUTES},
        "queue_age_h": [_hours((now - _utc(r["created_at"])).total_seconds()) for r in data.reviews
                        if r["status"] == "open"],
        "decision_latency_h": [_hours((_utc(r["decided_at"]) - _utc(r["created_at"])).total_seconds())
                               for r in data.reviews if r["decided_at"] is not None],
        "feedback_by_reason": dict(Counter(f["reason"] or ("up" if f["value"] > 0 else "down, no reason")
                                           for f in data.feedback).most_common()),
        "review_status": dict(Counter(r["status"] for r in data.reviews)),
        "reviewer_agreement": round(len(unchanged) / len(decided), 4) if decided else None,
        "held_decided": len(decided),
        "people": {"escalated": len(data.escalations),
                   "answered by people": sum(1 for e in data.escalations if e["status"] != "open"),
                   "turned into FAQ entries": sum(1 for r in data.reviews
                                                  if r["origin"] == "expert" and r["status"] == "faq")},
        "syncs": [(r["source"], _utc(r["at"]).isoformat(timespec="minutes"), "ok" if r["ok"] else "FAILED",
                   *(r[k] for k in ("added", "updated", "removed", "unchanged", "failed")), r["error"][:200])
                  for r in sorted(data.syncs, key=lambda r: r["source"])],
        "gaps": topic_gaps([t["question"] for t in turns if t["refused"] and t["reason"] not in NOT_GAPS]),
    }


def _by_scope(turns: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """Turns and refusals per knowledge scope ("" = none: scopes not used, or before them)."""
    out: dict[str, dict[str, int]] = {}
    for t in turns:
        row = out.setdefault(t.get("scope") or "", {"turns": 0, "answered": 0, "refused": 0})
        row["turns"] += 1
        row["refused" if t["refused"] else "answered"] += 1
    return dict(sorted(out.items()))


def topic_gaps(questions: list[str], top: int = 10) -> list[dict[str, Any]]:
    """Refused questions grouped by their two rarest-looking content words (a rough topic)."""
    groups: dict[str, list[str]] = defaultdict(list)
    for q in questions:
        terms = sorted(set(content_terms(q)), key=lambda w: (-len(w), w))[:2]
        groups[" + ".join(sorted(terms)) or "(no words)"].append(q)
    ranked = sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))[:top]
    return [{"topic": k, "count": len(v), "examples": v[:3]} for k, v in ranked]


def _tradeoff(plt: Any, routing: dict[str, Any]) -> Any:
    """bench.tuning.routing's curve: hallucinated answers unreviewed against right ones held, defaults marked."""
    pts = routing["curve_template_at_default"]
    fig, ax = plt.subplots(figsize=(5, 4))
    ax.plot([p["right_sent_to_review"] for p in pts], [p["hallucinated_unreviewed"] for p in pts], marker="o")
    for p in pts[::4]:
        ax.annotate(str(p["hold_risk"]), (p["right_sent_to_review"], p["hallucinated_unreviewed"]), fontsize=7)
    chosen = [p for p in pts if p["hold_risk"] == routing["defaults"]["hold_risk"]]
    if chosen:  # where the defaults sit on the curve
        ax.plot([chosen[0]["right_sent_to_review"]], [chosen[0]["hallucinated_unreviewed"]], "r*", markersize=12,
                label=f"defaults (hold_risk {chosen[0]['hold_risk']})")
        ax.legend(fontsize=7)
    ax.set_xlabel("right answers sent to review")
    ax.set_ylabel("hallucinated answers reaching users unreviewed")
    return fig


def _plots(s: dict[str, Any], routing: dict[str, Any] | None, out: Path) -> list[tuple[str, str]]:
    """PNG files (file name, caption); none when matplotlib is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    made: list[tuple[str, str]] = []

    def save(fig: Any, name: str, caption: str) -> None:
        fig.tight_layout()
        fig.savefig(out / name, dpi=110)
        plt.close(fig)
        made.append((name, caption))

    days = list(s["by_day"])
    if days:
        fig, ax = plt.subplots(figsize=(8, 3.5))
        keys = sorted({k for c in s["by_day"].values() for k in c}, key=lambda k: (k != "answered", k))
        bottom = [0] * len(days)
        for k in keys:
            vals = [s["by_day"][d].get(k, 0) for d in days]
            ax.bar(days, vals, bottom=bottom, label=k)
            bottom = [b + v for b, v in zip(bottom, vals, strict=True)]
        ax.set_ylabel("turns")
        ax.legend(fontsize=7)
        ax.tick_params(axis="x", labelrotation=45, labelsize=7)
        save(fig, "outcomes.png", "Answers and refusals by reason, per day")
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.hist([s["risk_by_route"][r] for r in ROUTES], bins=[i / 20 for i in range(21)], stacked=True, label=ROUTES)
    ax.set_xlabel("risk score")
    ax.set_ylabel("answers")
    ax.legend()
    save(fig, "risk.png", "Risk scores of answers the verifier let through, by route")
    fig, axes = plt.subplots(1, 2, figsize=(8, 3.2))
    axes[0].hist(s["queue_age_h"] or [0], bins=10)
    axes[0].set_title("open items: age (hours)", fontsize=9)
    axes[1].hist(s["decision_latency_h"] or [0], bins=10)
    axes[1].set_title("decided items: latency (hours)", fontsize=9)
    save(fig, "queue.png", "Review queue age and decision latency")
    if s["feedback_by_reason"]:
        fig, ax = plt.subplots(figsize=(6, 3))
        ax.barh(list(s["feedback_by_reason"]), list(s["feedback_by_reason"].values()))
        save(fig, "feedback.png", "Feedback by reason")
    if routing:
        fig = _tradeoff(plt, routing)
        save(fig, "tradeoff.png", f"HaluEval ({routing['split']} split): the hold_risk trade-off (labels: hold_risk)")
    return made


_TEMPLATES = Environment(loader=PackageLoader("bot.cli", "templates"), autoescape=select_autoescape(["html"]))


def render(s: dict[str, Any], plots: list[tuple[str, str]], since: str, routing: dict[str, Any] | None) -> str:
    """The page from bot/cli/templates/report.html; Jinja2 escapes every value from the database."""
    scopes = [(k, v["turns"], v["answered"], v["refused"]) for k, v in s["by_scope"].items()] if any(s["by_scope"]) else []
    routing_rows = ([(k, *(v.get(r) for r in ("reply", "template", "hold", "refuse")), v.get("n"))
                     for k, v in routing["at_defaults"].items()] if routing else [])
    return _TEMPLATES.get_template("report.html").render(
        s=s, plots=plots, since=since, routing=routing, scopes=scopes, routing_rows=routing_rows,
        routing_defaults=json.dumps(routing["defaults"]) if routing else "",
        gaps=[(g["topic"], g["count"], " | ".join(g["examples"])) for g in s["gaps"]]) + "\n"


def build_report(engine: Any, out: Path, since: datetime | None = None, routing_file: Path | None = None,
                 now: datetime | None = None) -> Path:
    from storage.records.report_data import load

    out.mkdir(parents=True, exist_ok=True)
    s = summarise(load(engine, since), now or datetime.now(UTC))
    routing = json.loads(routing_file.read_text(encoding="utf-8")) if routing_file and routing_file.is_file() else None
    page = out / "index.html"
    page.write_text(render(s, _plots(s, routing, out), since.date().isoformat() if since else "", routing),
                    encoding="utf-8")
    (out / "summary.json").write_text(json.dumps(s, indent=2, default=str) + "\n", encoding="utf-8")
    return page


def cmd_report(cfg: Any, args: argparse.Namespace) -> int:
    from bot.app import build_app

    try:
        since = datetime.fromisoformat(args.since).replace(tzinfo=UTC) if args.since else None
    except ValueError:
        print(f"groundbot report: --since wants a date like 2026-11-01, not {args.since!r}", file=sys.stderr)
        return 2
    app = build_app(cfg)
    page = build_report(app.store.engine, Path(args.out), since, Path(args.routing) if args.routing else None)
    print(f"Report written to {page}")
    return 0


def register(sub: Any) -> None:
    s = sub.add_parser("report", help="an HTML report with plots from the transcript database")
    s.add_argument("--since", default="", help="only turns from this date on (YYYY-MM-DD)")
    s.add_argument("--out", required=True, help="folder to write index.html and the plots to")
    s.add_argument("--routing", default=None, metavar="FILE",
                   help="a bench.tuning.routing results file (e.g. bench/results/routing_test.json in a source tree) "
                        "whose trade-off curve the report plots; left out by default")
    s.set_defaults(func=cmd_report)
