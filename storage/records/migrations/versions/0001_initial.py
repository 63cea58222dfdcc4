"""initial schema: conversations, turns, suggestions, feedback

Revision ID: 0001
Revises: (none)
Create Date: 2026-11-23
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table("conversation",
    sa.Column("id", sa.Integer(), nullable=False),
    sa.Column("key", sa.String(), nullable=False),
    sa.Column("platform", sa.String(), nullable=False),
    sa.Column("chat_id", sa.String(), nullable=False),
    sa.Column("thread_id", sa.String(), nullable=False),
    sa.Column("team_id", sa.String(), nullable=False),
    sa.Column("state", sa.String(), nullable=False),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint("id")
    )
    with op.batch_alter_table("conversation", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_conversation_key"), ["key"], unique=True)

    op.create_table("turn",
    sa.Column("id", sa.Integer(), nullable=False),
    sa.Column("conversation_id", sa.Integer(), nullable=False),
    sa.Column("platform", sa.String(), nullable=False),
    sa.Column("chat_id", sa.String(), nullable=False),
    sa.Column("thread_id", sa.String(), nullable=False),
    sa.Column("team_id", sa.String(), nullable=False),
    sa.Column("user_id", sa.String(), nullable=False),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("question", sa.String(), nullable=False),
    sa.Column("normalized_question", sa.String(), nullable=False),
    sa.Column("retrieval_query", sa.String(), nullable=False),
    sa.Column("answer", sa.String(), nullable=False),
    sa.Column("refused", sa.Boolean(), nullable=False),
    sa.Column("refusal_reason", sa.String(), nullable=False),
    sa.Column("status", sa.String(), nullable=False),
    sa.Column("state", sa.String(), nullable=False),
    sa.Column("reasons", sa.String(), nullable=False),
    sa.Column("checks_passed", sa.String(), nullable=False),
    sa.Column("checks_failed", sa.String(), nullable=False),
    sa.Column("scores", sa.String(), nullable=False),
    sa.Column("llm_called", sa.Boolean(), nullable=False),
    sa.Column("sources", sa.String(), nullable=False),
    sa.Column("uncovered_claims", sa.String(), nullable=False),
    sa.Column("latency_ms", sa.String(), nullable=False),
    sa.Column("latency_total_ms", sa.Float(), nullable=False),
    sa.Column("index_version", sa.String(), nullable=False),
    sa.Column("config_hash", sa.String(), nullable=False),
    sa.Column("language", sa.String(), nullable=False),
    sa.Column("record", sa.String(), nullable=False),
    sa.ForeignKeyConstraint(["conversation_id"], ["conversation.id"], ),
    sa.PrimaryKeyConstraint("id")
    )
    with op.batch_alter_table("turn", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_turn_conversation_id"), ["conversation_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_turn_created_at"), ["created_at"], unique=False)
        batch_op.create_index(batch_op.f("ix_turn_platform"), ["platform"], unique=False)
        batch_op.create_index(batch_op.f("ix_turn_refusal_reason"), ["refusal_reason"], unique=False)
        batch_op.create_index(batch_op.f("ix_turn_refused"), ["refused"], unique=False)
        batch_op.create_index(batch_op.f("ix_turn_state"), ["state"], unique=False)
        batch_op.create_index(batch_op.f("ix_turn_user_id"), ["user_id"], unique=False)

    op.create_table("feedback",
    sa.Column("id", sa.Integer(), nullable=False),
    sa.Column("turn_id", sa.Integer(), nullable=False),
    sa.Column("user_id", sa.String(), nullable=False),
    sa.Column("value", sa.Integer(), nullable=False),
    sa.Column("comment", sa.String(), nullable=False),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(["turn_id"], ["turn.id"], ),
    sa.PrimaryKeyConstraint("id")
    )
    with op.batch_alter_table("feedback", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_feedback_turn_id"), ["turn_id"], unique=False)

    op.create_table("suggestion",
    sa.Column("id", sa.Integer(), nullable=False),
    sa.Column("turn_id", sa.Integer(), nullable=False),
    sa.Column("text", sa.String(), nullable=False),
    sa.ForeignKeyConstraint(["turn_id"], ["turn.id"], ),
    sa.PrimaryKeyConstraint("id")
    )
    with op.batch_alter_table("suggestion", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_suggestion_turn_id"), ["turn_id"], unique=False)



def downgrade() -> None:
    with op.batch_alter_table("suggestion", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_suggestion_turn_id"))

    op.drop_table("suggestion")
    with op.batch_alter_table("feedback", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_feedback_turn_id"))

    op.drop_table("feedback")
    with op.batch_alter_table("turn", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_turn_user_id"))
        batch_op.drop_index(batch_op.f("ix_turn_state"))
        batch_op.drop_index(batch_op.f("ix_turn_refused"))
        batch_op.drop_index(batch_op.f("ix_turn_refusal_reason"))
        batch_op.drop_index(batch_op.f("ix_turn_platform"))
        batch_op.drop_index(batch_op.f("ix_turn_created_at"))
        batch_op.drop_index(batch_op.f("ix_turn_conversation_id"))

    op.drop_table("turn")
    with op.batch_alter_table("conversation", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_conversation_key"))

    op.drop_table("conversation")
