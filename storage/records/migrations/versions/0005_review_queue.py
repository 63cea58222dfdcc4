"""the review queue admins act on: one review item per turn (held drafts, complaints), feedback reasons

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-24
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table("review_item",
    sa.Column("id", sa.Integer(), nullable=False),
    sa.Column("turn_id", sa.Integer(), nullable=False),
    sa.Column("origin", sa.String(), nullable=False),
    sa.Column("reason", sa.String(), nullable=False, server_default=""),
    sa.Column("comment", sa.String(), nullable=False, server_default=""),
    sa.Column("status", sa.String(), nullable=False, server_default="open"),
    sa.Column("reviewer", sa.String(), nullable=False, server_default=""),
    sa.Column("final_answer", sa.String(), nullable=False, server_default=""),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("decided_at", sa.DateTime(timezone=True), nullable=True),
    sa.ForeignKeyConstraint(["turn_id"], ["turn.id"]),
    sa.PrimaryKeyConstraint("id")
    )
    with op.batch_alter_table("review_item", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_review_item_turn_id"), ["turn_id"], unique=True)
        batch_op.create_index(batch_op.f("ix_review_item_status"), ["status"], unique=False)
    with op.batch_alter_table("feedback", schema=None) as batch_op:
        batch_op.add_column(sa.Column("reason", sa.String(), nullable=False, server_default=""))
    # answers held before the queue existed become its first items
    op.execute("INSERT INTO review_item (turn_id, origin, reason, comment, status, reviewer, final_answer, created_at) "
               "SELECT id, 'held', '', '', 'open', '', '', created_at FROM turn WHERE state = 'pending_review'")


def downgrade() -> None:
    with op.batch_alter_table("feedback", schema=None) as batch_op:
        batch_op.drop_column("reason")
    with op.batch_alter_table("review_item", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_review_item_status"))
        batch_op.drop_index(batch_op.f("ix_review_item_turn_id"))
    op.drop_table("review_item")
