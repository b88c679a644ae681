"""jobs.resume_reason: why a queued job that already ran is queued again, for its next claim's event

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-22

Set by whatever queues a job that already ran again (resume after a pause, a retried failure, a worker that
shuts down: the finish status ``preempted``); the next claim says why ("Resumed from step N after its worker
shut down") and clears it. It replaces guessing the reason from ``attempts`` and ``started_at``.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.add_column(sa.Column("resume_reason", sa.String(length=64), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.drop_column("resume_reason")
