"""inference_replicas: the servers that serve each base model, the operator's and those started on demand

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-07

The API routes a model's requests across its replicas (api.inference.router) and asks a worker for one when a
registered model has none (api.inference.replicas, worker.serving).
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "inference_replicas",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("base_model", sa.String(length=256), nullable=False),
        sa.Column("origin", sa.String(length=16), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("url", sa.String(length=512), nullable=True),
        sa.Column("worker_id", sa.String(length=256), nullable=True),
        sa.Column("claim_id", sa.String(length=64), nullable=True),
        sa.Column("device_kind", sa.String(length=256), nullable=True),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.Column("claimed_at", sa.Float(), nullable=True),
        sa.Column("ready_at", sa.Float(), nullable=True),
        sa.Column("last_seen_at", sa.Float(), nullable=True),
        sa.Column("last_used_at", sa.Float(), nullable=False),
        sa.Column("stopped_at", sa.Float(), nullable=True),
        sa.Column("stop_reason", sa.String(length=256), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_inference_replicas")),
    )
    op.create_index("ix_inference_replicas_base_state", "inference_replicas", ["base_model", "state"])


def downgrade() -> None:
    op.drop_index("ix_inference_replicas_base_state", table_name="inference_replicas")
    op.drop_table("inference_replicas")
