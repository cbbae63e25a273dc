"""adversarial rewrites: per chosen conversation, its profile, last rewrite, ratings and fate

Revision ID: 0006
Revises: 0005
"""

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "rewrites",
        sa.Column("id", sa.String(length=80), nullable=False),
        sa.Column("conversation_id", sa.String(length=40), nullable=False),
        sa.Column("start", sa.Integer(), nullable=False),
        sa.Column("end", sa.Integer(), nullable=False),
        sa.Column("profile", sa.String(length=20), nullable=False),
        sa.Column("targets", sa.JSON(), nullable=False),
        sa.Column("status", sa.String(length=10), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("reasons", sa.JSON(), nullable=False),
        sa.Column("turns", sa.JSON(), nullable=False),
        sa.Column("ratings", sa.JSON(), nullable=False),
        sa.Column("source_ratings", sa.JSON(), nullable=False),
        sa.Column("item_id", sa.String(length=40), nullable=True),
        sa.Column("calls", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.String(length=32), nullable=False),
        sa.ForeignKeyConstraint(["conversation_id"], ["conversations.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_rewrites_conversation_id", "rewrites", ["conversation_id"])


def downgrade() -> None:
    op.drop_index("ix_rewrites_conversation_id", table_name="rewrites")
    op.drop_table("rewrites")
