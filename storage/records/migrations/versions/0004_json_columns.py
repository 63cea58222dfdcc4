"""decision record fields are JSON columns, not strings

PostgreSQL: the text columns become JSONB (existing rows converted in place). SQLite has no
column types to change: the same JSON text is stored and the models read it back as objects.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-24
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

COLUMNS = ("reasons", "checks_passed", "checks_failed", "scores", "sources", "uncovered_claims", "latency_ms", "record")


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for column in COLUMNS:
        op.alter_column("turn", column, type_=JSONB(), existing_type=sa.String(), existing_nullable=False,
                        postgresql_using=f"{column}::jsonb")


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for column in COLUMNS:
        op.alter_column("turn", column, type_=sa.String(), existing_type=JSONB(), existing_nullable=False,
                        postgresql_using=f"{column}::text")
