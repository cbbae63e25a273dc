"""the chance with which a pair was drawn for people to judge (people.judge_pairs)

Revision ID: 0014
Revises: 0013
"""

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("pairs") as table:
        table.add_column(sa.Column("people_chance", sa.Float(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("pairs") as table:
        table.drop_column("people_chance")
