"""outbox announcements: a row has a kind (a decision for the user, or a review item's
announcement to one platform's admins), one row per item, kind and platform

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-04
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("outbox", schema=None) as batch_op:
        # rows from before are all reviewed decisions
        batch_op.add_column(sa.Column("kind", sa.String(), nullable=False, server_default="decision"))
        batch_op.drop_index(batch_op.f("ix_outbox_item_id"))
        batch_op.create_index(batch_op.f("ix_outbox_item_id"), ["item_id"], unique=False)
        batch_op.create_index("ux_outbox_item_kind_platform", ["item_id", "kind", "platform"], unique=True)


def downgrade() -> None:
    op.execute("DELETE FROM outbox WHERE kind <> 'decision'")
    with op.batch_alter_table("outbox", schema=None) as batch_op:
        batch_op.drop_index("ux_outbox_item_kind_platform")
        batch_op.drop_index(batch_op.f("ix_outbox_item_id"))
        batch_op.create_index(batch_op.f("ix_outbox_item_id"), ["item_id"], unique=True)
        batch_op.drop_column("kind")
