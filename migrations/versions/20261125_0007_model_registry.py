"""base_models: the model registry (base models in the object store, one row of metadata each)

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-25

A registered model's files live in the object store under ``object_prefix``; ``files`` lists each with its size
and sha256 and ``digest`` (a sha256 over that list) keys the workers' node-local cache. Models still found only
in the operator's catalog folder (MODEL_CATALOG_DIR) keep working alongside.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "base_models",
        sa.Column("id", sa.String(length=128), nullable=False),
        sa.Column("source", sa.String(length=1024), nullable=False),
        sa.Column("hub_id", sa.String(length=256), nullable=True),
        sa.Column("architecture", sa.String(length=128), nullable=False),
        sa.Column("model_type", sa.String(length=64), nullable=False),
        sa.Column("parameter_count", sa.BigInteger(), nullable=True),
        sa.Column("dtype", sa.String(length=32), nullable=True),
        sa.Column("context_length", sa.Integer(), nullable=True),
        sa.Column("chat_template", sa.Boolean(), nullable=False),
        sa.Column("license", sa.Text(), nullable=True),
        sa.Column("files", sa.JSON(), nullable=False),
        sa.Column("digest", sa.String(length=64), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("object_prefix", sa.String(length=512), nullable=False),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_base_models")),
    )
    op.create_index(op.f("ix_base_models_digest"), "base_models", ["digest"], unique=False)


def downgrade() -> None:
    op.drop_index(op.f("ix_base_models_digest"), table_name="base_models")
    op.drop_table("base_models")
