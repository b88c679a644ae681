"""jobs.priority/preemptible/preempted_by, projects.share_weight/max_priority/max_running_jobs, usage_records,
project_secrets: one fleet shared by many projects

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-28

The API decides what runs next (api.jobs.scheduling): by priority, then by each project's decayed device-time
over its weight, then by age; a preemptible job may be paused for a waiting higher-priority one. What every
attempt used is metered (usage_records), and a project's secrets are stored encrypted (project_secrets).
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("jobs") as batch_op:
        batch_op.add_column(sa.Column("priority", sa.Integer(), server_default="0", nullable=False))
        batch_op.add_column(sa.Column("preemptible", sa.Boolean(), server_default=sa.text("true"), nullable=False))
        batch_op.add_column(sa.Column("preempted_by", sa.String(length=64), nullable=True))
        batch_op.add_column(sa.Column("queued_at", sa.BigInteger(), nullable=True))
    with op.batch_alter_table("projects") as batch_op:
        batch_op.add_column(sa.Column("share_weight", sa.Float(), server_default="1", nullable=False))
        batch_op.add_column(sa.Column("max_priority", sa.Integer(), server_default="0", nullable=False))
        batch_op.add_column(sa.Column("max_running_jobs", sa.Integer(), nullable=True))
    op.create_table(
        "usage_records",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("project_id", sa.String(length=64), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("subject_id", sa.String(length=512), nullable=False),
        sa.Column("job_id", sa.String(length=64), nullable=True),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("day", sa.String(length=10), nullable=False),
        sa.Column("device_kind", sa.String(length=256), nullable=True),
        sa.Column("devices", sa.Integer(), nullable=False),
        sa.Column("started_at", sa.Float(), nullable=False),
        sa.Column("last_seen_at", sa.Float(), nullable=False),
        sa.Column("device_seconds", sa.Float(), nullable=False),
        sa.Column("steps", sa.Integer(), nullable=False),
        sa.Column("last_step", sa.Integer(), nullable=False),
        sa.Column("sampled_tokens", sa.BigInteger(), nullable=False),
        sa.Column("trained_tokens", sa.BigInteger(), nullable=False),
        sa.Column("grader_calls", sa.BigInteger(), nullable=False),
        sa.Column("grader_seconds", sa.Float(), nullable=False),
        sa.Column("eval_tokens", sa.BigInteger(), nullable=False),
        sa.Column("inference_tokens", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_usage_records")),
        sa.UniqueConstraint("kind", "project_id", "subject_id", "attempt", "day", name="uq_usage_records_subject"),
    )
    op.create_index("ix_usage_records_project_day", "usage_records", ["project_id", "day"], unique=False)
    op.create_index(op.f("ix_usage_records_subject_id"), "usage_records", ["subject_id"], unique=False)
    op.create_index(op.f("ix_usage_records_job_id"), "usage_records", ["job_id"], unique=False)
    op.create_table(
        "project_secrets",
        sa.Column("project_id", sa.String(length=64), nullable=False),
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("ciphertext", sa.Text(), nullable=False),
        sa.Column("hint", sa.String(length=32), nullable=False),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.Column("updated_at", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("project_id", "name", name=op.f("pk_project_secrets")),
    )


def downgrade() -> None:
    op.drop_table("project_secrets")
    op.drop_index(op.f("ix_usage_records_job_id"), table_name="usage_records")
    op.drop_index(op.f("ix_usage_records_subject_id"), table_name="usage_records")
    op.drop_index("ix_usage_records_project_day", table_name="usage_records")
    op.drop_table("usage_records")
    with op.batch_alter_table("projects") as batch_op:
        batch_op.drop_column("max_running_jobs")
        batch_op.drop_column("max_priority")
        batch_op.drop_column("share_weight")
    with op.batch_alter_table("jobs") as batch_op:
        batch_op.drop_column("queued_at")
        batch_op.drop_column("preempted_by")
        batch_op.drop_column("preemptible")
        batch_op.drop_column("priority")
