"""jobs.readiness: the RL-readiness probe's reports (before training, after it, and their comparison)

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-25

Null unless the job asked for a probe (``hyperparameters.preflight``); ``GET /v1/fine_tuning/jobs/{id}/readiness``
shows it. ``dropped_rows`` (the probed rows without GRPO signal that the job trains without) is kept here so a
resumed attempt drops the same rows without probing again.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.add_column(sa.Column("readiness", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.drop_column("readiness")
