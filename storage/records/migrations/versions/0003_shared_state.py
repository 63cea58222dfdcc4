"""shared state for many workers: deliveries taken, rate-limit events, reply threads, conversation leases

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-24
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table("delivery",
    sa.Column("id", sa.Integer(), nullable=False),
    sa.Column("key", sa.String(), nullable=False),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint("id")
    )
    with op.batch_alter_table("delivery", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_delivery_key"), ["key"], unique=True)
        batch_op.create_index(batch_op.f("ix_delivery_created_at"), ["created_at"], unique=False)

    op.create_table("rate_event",
    sa.Column("id", sa.Integer(), nullable=False),
    sa.Column("subject", sa.String(), nullable=False),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint("id")
    )
    with op.batch_alter_table("rate_event", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_rate_event_subject"), ["subject"], unique=False)
        batch_op.create_index(batch_op.f("ix_rate_event_created_at"), ["created_at"], unique=False)

    op.create_table("reply_thread",
    sa.Column("id", sa.Integer(), nullable=False),
    sa.Column("key", sa.String(), nullable=False),
    sa.Column("thread", sa.String(), nullable=False),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint("id")
    )
    with op.batch_alter_table("reply_thread", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_reply_thread_key"), ["key"], unique=True)

    op.create_table("conversation_lease",
    sa.Column("key", sa.String(), nullable=False),
    sa.Column("holder", sa.String(), nullable=False),
    sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint("key")
    )


def downgrade() -> None:
    op.drop_table("conversation_lease")
    op.drop_table("reply_thread")
    op.drop_table("rate_event")
    op.drop_table("delivery")
