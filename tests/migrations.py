"""A records database brought to one Alembic revision, for tests of what a later migration does
to rows written before it."""

from __future__ import annotations

from alembic import command
from alembic.config import Config as AlembicConfig
from sqlalchemy.engine import Engine

from storage.records.database import MIGRATIONS, make_engine


def engine_at(database_url: str, revision: str) -> Engine:
    """An engine on `database_url`, its schema upgraded to `revision` and no further."""
    engine = make_engine(database_url)
    cfg = AlembicConfig()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, revision)
    return engine
