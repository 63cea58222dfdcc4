"""turn latency index: `stats` reads its percentiles as single rows in latency order

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-27
"""

from __future__ import annotations

from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("turn", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_turn_latency_total_ms"), ["latency_total_ms"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("turn", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_turn_latency_total_ms"))
