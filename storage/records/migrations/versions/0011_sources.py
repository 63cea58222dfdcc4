"""synced sources: each document's page state, each sync run

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table("source_page",
    sa.Column("source", sa.String(), nullable=False),
    sa.Column("doc_id", sa.String(), nullable=False),
    sa.Column("url", sa.String(), nullable=False, server_default=""),
    sa.Column("etag", sa.String(), nullable=False, server_default=""),
    sa.Column("last_modified", sa.String(), nullable=False, server_default=""),
    sa.Column("version", sa.String(), nullable=False, server_default=""),
    sa.Column("links", sa.Text(), nullable=False, server_default="[]"),
    sa.Column("synced_at", sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint("source", "doc_id")
    )
    op.create_table("sync_run",
    sa.Column("id", sa.Integer(), nullable=False),
    sa.Column("source", sa.String(), nullable=False),
    sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("seconds", sa.Float(), nullable=False, server_default="0"),
    sa.Column("ok", sa.Boolean(), nullable=False, server_default=sa.true()),
    sa.Column("added", sa.Integer(), nullable=False, server_default="0"),
    sa.Column("updated", sa.Integer(), nullable=False, server_default="0"),
    sa.Column("removed", sa.Integer(), nullable=False, server_default="0"),
    sa.Column("unchanged", sa.Integer(), nullable=False, server_default="0"),
    sa.Column("failed", sa.Integer(), nullable=False, server_default="0"),
    sa.Column("error", sa.String(), nullable=False, server_default=""),
    sa.PrimaryKeyConstraint("id")
    )
    with op.batch_alter_table("sync_run", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_sync_run_source"), ["source"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("sync_run", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_sync_run_source"))
    op.drop_table("sync_run")
    op.drop_table("source_page")
