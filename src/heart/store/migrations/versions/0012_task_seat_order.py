"""seats of one kind in the order claims take them, so a claim stops at the first free one

Revision ID: 0012
Revises: 0011
"""

from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_tasks_kind_seat", "tasks", ["kind", "seat", "id"])


def downgrade() -> None:
    op.drop_index("ix_tasks_kind_seat", table_name="tasks")
