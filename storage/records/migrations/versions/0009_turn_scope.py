"""turn scope: the knowledge scope each turn was answered from (stats and the report per scope)

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("turn", schema=None) as batch_op:
        batch_op.add_column(sa.Column("scope", sa.String(), nullable=False, server_default=""))
        batch_op.create_index(batch_op.f("ix_turn_scope"), ["scope"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("turn", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_turn_scope"))
        batch_op.drop_column("scope")
