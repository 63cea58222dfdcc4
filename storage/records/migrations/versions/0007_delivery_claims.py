"""delivery claims: a delivery is claimed (holder, claimed_at, payload) until answered, so a
message acknowledged by a worker that dies is answered by another

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-24
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    payload = sa.JSON(none_as_null=True).with_variant(JSONB(none_as_null=True), "postgresql")
    with op.batch_alter_table("delivery", schema=None) as batch_op:
        # rows from before were taken once and for all: they are done
        batch_op.add_column(sa.Column("state", sa.String(), nullable=False, server_default="done"))
        batch_op.add_column(sa.Column("holder", sa.String(), nullable=False, server_default=""))
        batch_op.add_column(sa.Column("claimed_at", sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column("attempts", sa.Integer(), nullable=False, server_default="1"))
        batch_op.add_column(sa.Column("payload", payload, nullable=True))
        batch_op.create_index(batch_op.f("ix_delivery_state"), ["state"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("delivery", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_delivery_state"))
        for name in ("payload", "attempts", "claimed_at", "holder", "state"):
            batch_op.drop_column(name)
