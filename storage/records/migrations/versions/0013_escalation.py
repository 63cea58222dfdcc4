"""escalations: a turn handed to people (its asker pressed "Ask a person"), and the expert's reply

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-05
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table("escalation",
    sa.Column("id", sa.Integer(), nullable=False),
    sa.Column("turn_id", sa.Integer(), nullable=False),
    sa.Column("platform", sa.String(), nullable=False),
    sa.Column("chat_id", sa.String(), nullable=False),
    sa.Column("thread_id", sa.String(), nullable=False),
    sa.Column("asker", sa.String(), nullable=False),
    sa.Column("status", sa.String(), nullable=False),
    sa.Column("expert", sa.String(), nullable=False, server_default=""),
    sa.Column("answer", sa.String(), nullable=False, server_default=""),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("answered_at", sa.DateTime(timezone=True), nullable=True),
    sa.ForeignKeyConstraint(["turn_id"], ["turn.id"]),
    sa.PrimaryKeyConstraint("id")
    )
    with op.batch_alter_table("escalation", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_escalation_turn_id"), ["turn_id"], unique=True)
        batch_op.create_index("ix_escalation_thread", ["platform", "chat_id", "thread_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("escalation", schema=None) as batch_op:
        batch_op.drop_index("ix_escalation_thread")
        batch_op.drop_index(batch_op.f("ix_escalation_turn_id"))
    op.drop_table("escalation")
