"""an index on the rater of each seat: a person's own seats are looked up on every page

Revision ID: 0004
Revises: 0003
"""

from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_tasks_rater_id", "tasks", ["rater_id"])


def downgrade() -> None:
    op.drop_index("ix_tasks_rater_id", table_name="tasks")
