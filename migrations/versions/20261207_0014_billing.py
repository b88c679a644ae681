"""money: prices and a monthly budget per project, a budget per job, the log of their changes, and the seconds
of the steps' phases on the usage records (what the estimate is calibrated from)

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-07

Costs are computed from the usage records at the operator's prices (api.billing); nothing here meters anything.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None
SECONDS = ("sampling_seconds", "training_seconds", "eval_seconds")  # the steps' phases, metered for the estimate


def upgrade() -> None:
    with op.batch_alter_table("usage_records") as batch_op:
        for name in SECONDS:
            batch_op.add_column(sa.Column(name, sa.Float(), server_default="0", nullable=False))
    with op.batch_alter_table("projects") as batch_op:
        batch_op.add_column(sa.Column("prices", sa.JSON(), nullable=True))
        batch_op.add_column(sa.Column("monthly_budget", sa.Float(), nullable=True))
    with op.batch_alter_table("jobs") as batch_op:
        batch_op.add_column(sa.Column("budget", sa.JSON(), nullable=True))
        batch_op.add_column(sa.Column("budget_alert", sa.String(length=16), nullable=True))
    op.create_table(
        "billing_changes",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.Column("project_id", sa.String(length=64), nullable=False),
        sa.Column("subject", sa.String(length=128), nullable=False),
        sa.Column("field", sa.String(length=32), nullable=False),
        sa.Column("before", sa.JSON(), nullable=True),
        sa.Column("after", sa.JSON(), nullable=True),
        sa.Column("actor", sa.String(length=64), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_billing_changes")),
    )
    op.create_index(op.f("ix_billing_changes_created_at"), "billing_changes", ["created_at"])
    op.create_index(op.f("ix_billing_changes_project_id"), "billing_changes", ["project_id"])


def downgrade() -> None:
    op.drop_index(op.f("ix_billing_changes_project_id"), table_name="billing_changes")
    op.drop_index(op.f("ix_billing_changes_created_at"), table_name="billing_changes")
    op.drop_table("billing_changes")
    with op.batch_alter_table("jobs") as batch_op:
        batch_op.drop_column("budget_alert")
        batch_op.drop_column("budget")
    with op.batch_alter_table("projects") as batch_op:
        batch_op.drop_column("monthly_budget")
        batch_op.drop_column("prices")
    with op.batch_alter_table("usage_records") as batch_op:
        for name in SECONDS:
            batch_op.drop_column(name)
