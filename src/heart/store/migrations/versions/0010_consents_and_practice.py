"""people's consent (when, and to which text) and their practice answers, apart from the work

Revision ID: 0010
Revises: 0009
"""

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "consents",
        sa.Column("rater_id", sa.String(length=40), nullable=False),
        sa.Column("text_hash", sa.String(length=64), nullable=False),
        sa.Column("consented_at", sa.String(length=32), nullable=False),
        sa.ForeignKeyConstraint(["rater_id"], ["raters.id"]),
        sa.PrimaryKeyConstraint("rater_id"),
    )
    op.create_table(
        "practice_answers",
        sa.Column("rater_id", sa.String(length=40), nullable=False),
        sa.Column("choice", sa.String(length=4), nullable=False),
        sa.Column("rationale", sa.Text(), nullable=False),
        sa.Column("correct", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.String(length=32), nullable=False),
        sa.ForeignKeyConstraint(["rater_id"], ["raters.id"]),
        sa.PrimaryKeyConstraint("rater_id"),
    )


def downgrade() -> None:
    op.drop_table("practice_answers")
    op.drop_table("consents")
