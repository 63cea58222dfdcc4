"""access refusals: who was refused which route and scope, why and when (storage/records/access_refusals.py)

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table("access_refusal",
    sa.Column("id", sa.Integer(), nullable=False),
    sa.Column("at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("route", sa.String(), nullable=False),
    sa.Column("who", sa.String(), nullable=False),
    sa.Column("scope", sa.String(), nullable=False, server_default=""),
    sa.Column("reason", sa.String(), nullable=False),
    sa.Column("status", sa.Integer(), nullable=False),
    sa.Column("repeats", sa.Integer(), nullable=False, server_default="0"),
    sa.PrimaryKeyConstraint("id")
    )
    with op.batch_alter_table("access_refusal", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_access_refusal_at"), ["at"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("access_refusal", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_access_refusal_at"))
    op.drop_table("access_refusal")
