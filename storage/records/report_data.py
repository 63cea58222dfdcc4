"""What the monitoring report reads from the transcript database, as plain rows.

One query per table, filtered by date; the report (bot/cli/report.py) does the arithmetic."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from storage.records.escalations import Escalation
from storage.records.source_state import SourceState
from storage.records.transcripts import Feedback, ReviewItem, TurnRecord


@dataclass
class ReportData:
    turns: list[dict[str, Any]]
    reviews: list[dict[str, Any]]
    feedback: list[dict[str, Any]]
    syncs: list[dict[str, Any]] = field(default_factory=list)  # each source's last sync
    escalations: list[dict[str, Any]] = field(default_factory=list)  # questions handed to people


def load(engine: Engine, since: datetime | None = None) -> ReportData:
    with Session(engine) as session:
        q = select(TurnRecord)
        if since is not None:
            q = q.where(TurnRecord.created_at >= since)
        turns = [{"id": t.id, "created_at": t.created_at, "refused": t.refused, "reason": t.refusal_reason,
                  "state": t.state, "question": t.question, "route": (t.record or {}).get("route") or "",
                  "risk": (t.record or {}).get("risk"), "draft": (t.record or {}).get("draft") or "",
                  "scope": t.scope}
                 for t in session.exec(q.order_by(TurnRecord.id)).all()]  # type: ignore[arg-type]
        ids = {t["id"] for t in turns}
        reviews = [{"turn_id": r.turn_id, "origin": r.origin, "reason": r.reason, "status": r.status,
                    "final_answer": r.final_answer, "created_at": r.created_at, "decided_at": r.decided_at}
                   for r in session.exec(select(ReviewItem)).all() if r.turn_id in ids]
        feedback = [{"turn_id": f.turn_id, "value": f.value, "reason": f.reason, "created_at": f.created_at}
                    for f in session.exec(select(Feedback)).all() if f.turn_id in ids]
        escalations = [{"turn_id": e.turn_id, "status": e.status} for e in session.exec(select(Escalation)).all()
                       if e.turn_id in ids]
    syncs = [{"source": r.source, "at": r.started_at, "ok": r.ok, "added": r.added, "updated": r.updated,
              "removed": r.removed, "unchanged": r.unchanged, "failed": r.failed, "error": r.error}
             for r in SourceState(engine).last_runs().values()]
    return ReportData(turns, reviews, feedback, syncs, escalations)
