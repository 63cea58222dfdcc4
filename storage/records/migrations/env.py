"""Alembic environment for groundbot's transcript database.

groundbot runs migrations itself when it opens the database (storage.records.database.migrate),
handing Alembic its own connection; the `alembic` command line works too with
`-x url=sqlite:///path/transcripts.db`.
"""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine
from sqlmodel import SQLModel

import storage.records.access_refusals  # noqa: F401  (registers the access-refusal table)
import storage.records.deliveries  # noqa: F401  (registers the delivery table)
import storage.records.escalations  # noqa: F401  (registers the escalation table)
import storage.records.leases  # noqa: F401  (registers the lease table)
import storage.records.rate_events  # noqa: F401  (registers the rate-event table)
import storage.records.reply_threads  # noqa: F401  (registers the reply-thread table)
import storage.records.source_state  # noqa: F401  (registers the synced-source tables)
import storage.records.tables  # noqa: F401  (registers the tables on SQLModel.metadata)

config = context.config
target_metadata = SQLModel.metadata


def run() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        context.configure(connection=connection, target_metadata=target_metadata, render_as_batch=True)
        with context.begin_transaction():
            context.run_migrations()
        return
    url = context.get_x_argument(as_dictionary=True).get("url") or config.get_main_option("sqlalchemy.url")
    engine = create_engine(str(url))
    with engine.connect() as conn:
        context.configure(connection=conn, target_metadata=target_metadata, render_as_batch=True)
        with context.begin_transaction():
            context.run_migrations()


run()
