"""jobs.integrations: OpenAI's integrations (W&B) of a job

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-25

``[{"type": "wandb", "wandb": {"project", "name", "entity", "tags"}}]`` as the job was created with it; the worker
mirrors the config, the per-step metrics and the adapter's location there (worker.tracking). Null: none.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.add_column(sa.Column("integrations", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.drop_column("integrations")
