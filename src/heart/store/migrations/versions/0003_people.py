"""tasks for people (write, judge, label seats with claims) and strategy labels

Revision ID: 0003
Revises: 0002
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "tasks",
        sa.Column("id", sa.String(length=120), nullable=False),
        sa.Column("kind", sa.String(length=10), nullable=False),
        sa.Column("target", sa.String(length=60), nullable=False),
        sa.Column("item_id", sa.String(length=40), nullable=False),
        sa.Column("seat", sa.Integer(), nullable=False),
        sa.Column("shown", sa.String(length=2), nullable=False),
        sa.Column("check", sa.String(length=10), nullable=True),
        sa.Column("expected", sa.String(length=20), nullable=True),
        sa.Column("rater_id", sa.String(length=40), nullable=True),
        sa.Column("expires_at", sa.Float(), nullable=True),
        sa.Column("served_at", sa.Float(), nullable=True),
        sa.Column("submitted_at", sa.Float(), nullable=True),
        sa.Column("done", sa.Boolean(), nullable=False),
        sa.Column("passed", sa.Boolean(), nullable=True),
        sa.ForeignKeyConstraint(["item_id"], ["items.id"]),
        sa.ForeignKeyConstraint(["rater_id"], ["raters.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("kind", "target", "seat"),
        sa.UniqueConstraint("kind", "target", "rater_id"),
    )
    op.create_index("ix_tasks_kind", "tasks", ["kind"])
    op.create_index("ix_tasks_item_id", "tasks", ["item_id"])
    op.create_index("ix_tasks_done", "tasks", ["done"])
    op.create_table(
        "strategy_labels",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("completion_id", sa.String(length=40), nullable=False),
        sa.Column("rater_id", sa.String(length=40), nullable=False),
        sa.Column("strategies", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.String(length=32), nullable=False),
        sa.ForeignKeyConstraint(["completion_id"], ["completions.id"]),
        sa.ForeignKeyConstraint(["rater_id"], ["raters.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("completion_id", "rater_id"),
    )
    op.create_index("ix_strategy_labels_completion_id", "strategy_labels", ["completion_id"])
    op.create_index("ix_strategy_labels_rater_id", "strategy_labels", ["rater_id"])


def downgrade() -> None:
    op.drop_table("strategy_labels")
    op.drop_table("tasks")
