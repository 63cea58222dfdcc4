"""Engines and schema for the transcript database: SQLite in WAL mode with BEGIN IMMEDIATE
(so a read-modify-write of a conversation cannot lose an update between workers), PostgreSQL
as it comes; Alembic migrations run one at a time; which errors are worth a retry; the name a
worker holds its delivery claims and leases under."""

from __future__ import annotations

import json
import os
import socket
import threading
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import delete, event, inspect, text
from sqlalchemy.engine import Engine
from sqlalchemy.exc import OperationalError
from sqlmodel import Session, create_engine


def _sqlite_pragmas(engine: Engine, busy_timeout_s: float, *, immediate: bool) -> None:
    """WAL, a busy timeout, and (for the writing engine) BEGIN IMMEDIATE, which pysqlite would
    otherwise defer and upgrade late, losing read-modify-write updates between workers."""

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        cur.execute(f"PRAGMA busy_timeout={int(busy_timeout_s * 1000)}")
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute("PRAGMA synchronous=NORMAL")
        cur.execute("PRAGMA foreign_keys=ON")
        cur.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Any) -> None:
        conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")


def _json_text(value: Any) -> str:
    """JSON as stored: non-ASCII text (Persian questions, sources) kept readable."""
    return json.dumps(value, ensure_ascii=False)


def make_engine(url: str, busy_timeout_s: float = 10.0, *, immediate: bool = True) -> Engine:
    """An engine for `url`; SQLite gets WAL and a busy timeout of `busy_timeout_s`."""
    if url.startswith("sqlite"):
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": busy_timeout_s},
                               json_serializer=_json_text)
        _sqlite_pragmas(engine, busy_timeout_s, immediate=immediate)
    else:
        engine = create_engine(url, pool_pre_ping=True, json_serializer=_json_text)
    return engine


def utcnow() -> datetime:
    """Now, in UTC: what every row's timestamp is written in."""
    return datetime.now(UTC)


def aware(value: datetime) -> datetime:
    """SQLite hands datetimes back naive; they were written in UTC."""
    return value if value.tzinfo else value.replace(tzinfo=UTC)


class Pruner:
    """Forgets a table's rows older than `keep_s` (by its timestamp `column`), at most once every
    `every_s` of `clock`: a store prunes as it is used, not on a thread of its own."""

    def __init__(self, engine: Engine, table: Any, column: Any, keep_s: float, clock: Callable[[], float],
                 every_s: float = 60.0) -> None:
        self.engine, self.table, self.column = engine, table, column
        self.keep_s, self.clock, self.every_s = keep_s, clock, every_s
        self._last = 0.0

    def __call__(self) -> None:
        now = self.clock()
        if now - self._last < self.every_s:
            return
        self._last = now
        with Session(self.engine) as session:
            session.execute(delete(self.table).where(self.column < utcnow() - timedelta(seconds=self.keep_s)))
            session.commit()


def worker_id() -> str:
    """A name for this process as the holder of delivery claims and leases: host, pid and a
    random part, so two objects of one process hold apart."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


MIGRATIONS = Path(__file__).resolve().parent / "migrations"
_MIGRATE_LOCK = threading.Lock()
_MIGRATE_LOCK_KEY = 0x67726F75  # PostgreSQL advisory lock id of groundbot's schema migrations


def migrate(engine: Engine) -> None:
    """Bring the schema to the newest Alembic revision. A database made before migrations
    existed (tables, no version) is stamped at the initial revision first."""
    from alembic import command
    from alembic.config import Config as AlembicConfig

    cfg = AlembicConfig()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    # one migration at a time: Alembic's context is process-global, and workers starting together
    # on a new PostgreSQL database would otherwise race to create the same tables
    with _MIGRATE_LOCK, engine.begin() as conn:
        if conn.dialect.name == "postgresql":
            conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _MIGRATE_LOCK_KEY})
        tables = set(inspect(conn).get_table_names())
        cfg.attributes["connection"] = conn
        if "turn" in tables and "alembic_version" not in tables:
            command.stamp(cfg, "0001")
        command.upgrade(cfg, "head")


def transient(exc: BaseException) -> bool:
    """Worth retrying: a busy or locked database, a dropped connection. Not: read-only, full."""
    if not isinstance(exc, OperationalError):
        return False
    text = str(exc).lower()
    return not any(s in text for s in ("readonly", "read-only", "disk is full", "disk i/o", "no such table"))
