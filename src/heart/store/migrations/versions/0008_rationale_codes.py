"""rationale codings and their codes, by coder and codebook

Revision ID: 0008
Revises: 0007
"""

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "rationale_codings",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("judgment_id", sa.String(length=40), nullable=False),
        sa.Column("coder", sa.String(length=300), nullable=False),
        sa.Column("codebook_hash", sa.String(length=64), nullable=False),
        sa.Column("status", sa.String(length=10), nullable=False),
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
        sa.ForeignKeyConstraint(["judgment_id"], ["judgments.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("judgment_id", "coder", "codebook_hash"),
    )
    op.create_index("ix_rationale_codings_judgment_id", "rationale_codings", ["judgment_id"])
    op.create_table(
        "rationale_codes",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("coding_id", sa.String(length=40), nullable=False),
        sa.Column("judgment_id", sa.String(length=40), nullable=False),
        sa.Column("coder", sa.String(length=300), nullable=False),
        sa.Column("codebook_hash", sa.String(length=64), nullable=False),
        sa.Column("theme", sa.String(length=60), nullable=False),
        sa.Column("side", sa.String(length=4), nullable=False),
        sa.Column("negated", sa.Boolean(), nullable=False),
        sa.Column("evidence", sa.Text(), nullable=False),
        sa.Column("span_start", sa.Integer(), nullable=True),
        sa.Column("span_end", sa.Integer(), nullable=True),
        sa.Column("cue", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(["coding_id"], ["rationale_codings.id"]),
        sa.ForeignKeyConstraint(["judgment_id"], ["judgments.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_rationale_codes_coding_id", "rationale_codes", ["coding_id"])
    op.create_index("ix_rationale_codes_judgment_id", "rationale_codes", ["judgment_id"])


def downgrade() -> None:
    op.drop_index("ix_rationale_codes_judgment_id", table_name="rationale_codes")
    op.drop_index("ix_rationale_codes_coding_id", table_name="rationale_codes")
    op.drop_table("rationale_codes")
    op.drop_index("ix_rationale_codings_judgment_id", table_name="rationale_codings")
    op.drop_table("rationale_codings")
