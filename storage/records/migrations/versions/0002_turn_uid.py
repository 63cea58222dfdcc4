"""turn uid: spooled turns are replayed exactly once

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-23
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("turn", schema=None) as batch_op:
        batch_op.add_column(sa.Column("uid", sa.String(), nullable=True))
        batch_op.create_index(batch_op.f("ix_turn_uid"), ["uid"], unique=True)



def downgrade() -> None:
    with op.batch_alter_table("turn", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_turn_uid"))
        batch_op.drop_column("uid")

