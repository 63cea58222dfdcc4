"""Rows past their keep time are forgotten as a store is used, at most once per interval."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from sqlmodel import Session, col, select

from storage.records.database import Pruner, make_engine, migrate, utcnow
from storage.records.rate_events import RateEvent


def test_old_rows_go_new_ones_stay_and_pruning_waits_its_interval(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{(tmp_path / 'records.db').as_posix()}")
    migrate(engine)
    now = [1000.0]
    prune = Pruner(engine, RateEvent, col(RateEvent.created_at), keep_s=120.0, clock=lambda: now[0])

    def subjects() -> list[str]:
        with Session(engine) as session:
            return sorted(session.exec(select(RateEvent.subject)).all())

    with Session(engine) as session:
        session.add_all([RateEvent(subject="old", created_at=utcnow() - timedelta(seconds=300)),
                         RateEvent(subject="new")])
        session.commit()
    prune()
    assert subjects() == ["new"]
    with Session(engine) as session:
        session.add(RateEvent(subject="old again", created_at=utcnow() - timedelta(seconds=300)))
        session.commit()
    now[0] += 30.0
    prune()  # within the minute: not run again
    assert subjects() == ["new", "old again"]
    now[0] += 60.0
    prune()
    assert subjects() == ["new"]
