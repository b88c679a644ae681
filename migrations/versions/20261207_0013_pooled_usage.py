"""usage_records.shared: an attempt that shared its worker with other jobs (a pool of tenants)

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-07

A pooled job's device-seconds are the seconds its own steps held the device (api.usage.metering), not the
wall-clock span of its attempt, which every tenant of the pool would otherwise be billed in full.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("usage_records") as batch_op:
        batch_op.add_column(sa.Column("shared", sa.Boolean(), server_default=sa.text("false"), nullable=False))


def downgrade() -> None:
    with op.batch_alter_table("usage_records") as batch_op:
        batch_op.drop_column("shared")
