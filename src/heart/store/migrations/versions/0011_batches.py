"""batches sent to provider batch APIs and the calls each holds; per answer, the prompt
tokens a provider cache served and the list price of the call

Revision ID: 0011
Revises: 0010
"""

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

USAGE_TABLES = ("completions", "judgments", "strategy_classifications", "rationale_codings")


def upgrade() -> None:
    op.create_table(
        "batches",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("provider", sa.String(length=40), nullable=False),
        sa.Column("endpoint", sa.String(length=300), nullable=False),
        sa.Column("model", sa.String(length=200), nullable=False),
        sa.Column("stage", sa.String(length=40), nullable=False),
        sa.Column("remote_id", sa.String(length=200), nullable=True),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("total", sa.Integer(), nullable=False),
        sa.Column("succeeded", sa.Integer(), nullable=False),
        sa.Column("errored", sa.Integer(), nullable=False),
        sa.Column("detail", sa.Text(), nullable=False),
        sa.Column("submitted_at", sa.String(length=32), nullable=False),
        sa.Column("updated_at", sa.String(length=32), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_table(
        "batch_calls",
        sa.Column("batch_id", sa.String(length=40), nullable=False),
        sa.Column("call_key", sa.String(length=64), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("response", sa.JSON(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("cause", sa.String(length=40), nullable=True),
        sa.Column("retryable", sa.Boolean(), nullable=False),
        sa.ForeignKeyConstraint(["batch_id"], ["batches.id"]),
        sa.PrimaryKeyConstraint("batch_id", "call_key"),
    )
    op.create_index("ix_batch_calls_call_key", "batch_calls", ["call_key"])
    for table in USAGE_TABLES:
        with op.batch_alter_table(table) as alter:
            alter.add_column(sa.Column("cached_tokens_in", sa.Integer(), nullable=True))
            alter.add_column(sa.Column("list_cost_usd", sa.Float(), nullable=True))


def downgrade() -> None:
    for table in USAGE_TABLES:
        with op.batch_alter_table(table) as alter:
            alter.drop_column("list_cost_usd")
            alter.drop_column("cached_tokens_in")
    op.drop_index("ix_batch_calls_call_key", table_name="batch_calls")
    op.drop_table("batch_calls")
    op.drop_table("batches")
