"""how many times a person answered the practice pair (their latest answer is kept)

Revision ID: 0013
Revises: 0012
"""

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("practice_answers") as table:
        table.add_column(sa.Column("tries", sa.Integer(), nullable=False, server_default="1"))


def downgrade() -> None:
    with op.batch_alter_table("practice_answers") as table:
        table.drop_column("tries")
