"""the outbox of reviewed decisions: pending until the worker holding the platform has sent them

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-24
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table("outbox",
    sa.Column("id", sa.Integer(), nullable=False),
    sa.Column("item_id", sa.Integer(), nullable=False),
    sa.Column("platform", sa.String(), nullable=False),
    sa.Column("chat_id", sa.String(), nullable=False),
    sa.Column("thread_id", sa.String(), nullable=False, server_default=""),
    sa.Column("decision", sa.JSON().with_variant(JSONB(), "postgresql"), nullable=False),
    sa.Column("status", sa.String(), nullable=False, server_default="pending"),
    sa.Column("attempts", sa.Integer(), nullable=False, server_default="0"),
    sa.Column("last_error", sa.String(), nullable=False, server_default=""),
    sa.Column("due_at", sa.Float(), nullable=False, server_default="0"),
    sa.Column("claimed_by", sa.String(), nullable=False, server_default=""),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("sent_at", sa.DateTime(timezone=True), nullable=True),
    sa.ForeignKeyConstraint(["item_id"], ["review_item.id"]),
    sa.PrimaryKeyConstraint("id")
    )
    with op.batch_alter_table("outbox", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_outbox_item_id"), ["item_id"], unique=True)
        batch_op.create_index(batch_op.f("ix_outbox_platform"), ["platform"], unique=False)
        batch_op.create_index(batch_op.f("ix_outbox_status"), ["status"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("outbox", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_outbox_status"))
        batch_op.drop_index(batch_op.f("ix_outbox_platform"))
        batch_op.drop_index(batch_op.f("ix_outbox_item_id"))
    op.drop_table("outbox")
