"""strategy classifications by the LLM classifier, and the taxonomy hash of human labels

Revision ID: 0007
Revises: 0006
"""

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "strategy_classifications",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("completion_id", sa.String(length=40), nullable=False),
        sa.Column("classifier", sa.String(length=300), nullable=False),
        sa.Column("taxonomy_hash", sa.String(length=64), nullable=False),
        sa.Column("status", sa.String(length=10), nullable=False),
        sa.Column("labels", sa.JSON(), nullable=False),
        sa.Column("raw", sa.Text(), nullable=True),
        sa.Column("refused", sa.JSON(), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("prompt_hash", sa.String(length=64), nullable=True),
        sa.Column("call_hash", sa.String(length=64), nullable=True),
        sa.Column("latency_ms", sa.Float(), nullable=True),
        sa.Column("tokens_in", sa.Integer(), nullable=True),
        sa.Column("tokens_out", sa.Integer(), nullable=True),
        sa.Column("cost_usd", sa.Float(), nullable=True),
        sa.Column("created_at", sa.String(length=32), nullable=False),
        sa.ForeignKeyConstraint(["completion_id"], ["completions.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("completion_id", "classifier", "taxonomy_hash"),
    )
    op.create_index(
        "ix_strategy_classifications_completion_id",
        "strategy_classifications",
        ["completion_id"],
    )
    with op.batch_alter_table("strategy_labels") as batch:
        batch.add_column(sa.Column("taxonomy_hash", sa.String(length=64), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("strategy_labels") as batch:
        batch.drop_column("taxonomy_hash")
    op.drop_index(
        "ix_strategy_classifications_completion_id", table_name="strategy_classifications"
    )
    op.drop_table("strategy_classifications")
