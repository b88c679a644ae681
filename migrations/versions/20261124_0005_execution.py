"""jobs.execution: where and how the worker runs the job (device, precision, micro-batch, engine)

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-24

The job's ``auto`` hyperparameters (device, precision, micro_batch_size, gradient_checkpointing, rollout_engine)
are resolved by the worker on its hardware; it reports what they resolved to when training starts
(grpo_core.schemas.metrics.Execution), and the job object shows it. Null until then; replaced by each attempt.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.add_column(sa.Column("execution", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.drop_column("execution")
