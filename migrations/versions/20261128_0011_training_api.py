"""training_sessions, training_runs, sampling_sessions, training_checkpoints, training_requests,
training_run_metrics: the training API

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-28

The ``tinker`` SDK's objects (api.training): a session a worker leases to hold its models, its LoRA training runs
and sampling clients, the checkpoints they save, every call as a request row (the future the client polls) taken
by the session's worker in ``seq`` order, and the metrics a client reports for its own loop's steps.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "training_sessions",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("project_id", sa.String(length=64), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("tags", sa.JSON(), nullable=False),
        sa.Column("user_metadata", sa.JSON(), nullable=True),
        sa.Column("sdk_version", sa.String(length=64), nullable=True),
        sa.Column("next_seq", sa.BigInteger(), nullable=False),
        sa.Column("claim_id", sa.String(length=64), nullable=True),
        sa.Column("worker_id", sa.String(length=256), nullable=True),
        sa.Column("lease_expires_at", sa.BigInteger(), nullable=True),
        sa.Column("enqueued_at", sa.BigInteger(), nullable=True),
        sa.Column("heartbeat_at", sa.BigInteger(), nullable=True),
        sa.Column("error", sa.JSON(), nullable=True),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.Column("finished_at", sa.BigInteger(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_training_sessions")),
    )
    with op.batch_alter_table("training_sessions", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_training_sessions_project_id"), ["project_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_training_sessions_lease_expires_at"), ["lease_expires_at"], unique=False)
        batch_op.create_index(batch_op.f("ix_training_sessions_status"), ["status"], unique=False)

    op.create_table(
        "sampling_sessions",
        sa.Column("id", sa.String(length=160), nullable=False),
        sa.Column("session_id", sa.String(length=64), nullable=False),
        sa.Column("project_id", sa.String(length=64), nullable=False),
        sa.Column("base_model", sa.String(length=128), nullable=False),
        sa.Column("checkpoint_id", sa.String(length=64), nullable=True),
        sa.Column("snapshot_of", sa.String(length=160), nullable=True),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(
            ["session_id"], ["training_sessions.id"], name=op.f("fk_sampling_sessions_session_id_training_sessions")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_sampling_sessions")),
    )
    with op.batch_alter_table("sampling_sessions", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_sampling_sessions_project_id"), ["project_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_sampling_sessions_session_id"), ["session_id"], unique=False)

    op.create_table(
        "training_requests",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("session_id", sa.String(length=64), nullable=False),
        sa.Column("project_id", sa.String(length=64), nullable=False),
        sa.Column("seq", sa.BigInteger(), nullable=False),
        sa.Column("client_seq", sa.BigInteger(), nullable=True),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("target", sa.String(length=160), nullable=True),
        sa.Column("payload", sa.JSON(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("result", sa.JSON(), nullable=True),
        sa.Column("metrics", sa.JSON(), nullable=True),
        sa.Column("error", sa.JSON(), nullable=True),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.Column("finished_at", sa.BigInteger(), nullable=True),
        sa.Column("result_expires_at", sa.BigInteger(), nullable=True),
        sa.ForeignKeyConstraint(
            ["session_id"], ["training_sessions.id"], name=op.f("fk_training_requests_session_id_training_sessions")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_training_requests")),
        sa.UniqueConstraint("target", "client_seq", name=op.f("uq_training_requests_target")),
    )
    with op.batch_alter_table("training_requests", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_training_requests_project_id"), ["project_id"], unique=False)
        batch_op.create_index("ix_training_requests_session_status_seq", ["session_id", "status", "seq"], unique=False)
        batch_op.create_index("ix_training_requests_target_kind", ["target", "kind"], unique=False)
        batch_op.create_index(batch_op.f("ix_training_requests_status"), ["status"], unique=False)
        batch_op.create_index(batch_op.f("ix_training_requests_result_expires_at"), ["result_expires_at"], unique=False)

    op.create_table(
        "training_runs",
        sa.Column("id", sa.String(length=160), nullable=False),
        sa.Column("session_id", sa.String(length=64), nullable=False),
        sa.Column("project_id", sa.String(length=64), nullable=False),
        sa.Column("base_model", sa.String(length=128), nullable=False),
        sa.Column("lora", sa.JSON(), nullable=False),
        sa.Column("user_metadata", sa.JSON(), nullable=True),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.Column("last_request_at", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(
            ["session_id"], ["training_sessions.id"], name=op.f("fk_training_runs_session_id_training_sessions")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_training_runs")),
    )
    with op.batch_alter_table("training_runs", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_training_runs_project_id"), ["project_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_training_runs_session_id"), ["session_id"], unique=False)

    op.create_table(
        "training_checkpoints",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("project_id", sa.String(length=64), nullable=False),
        sa.Column("run_id", sa.String(length=160), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("name", sa.String(length=256), nullable=False),
        sa.Column("tinker_path", sa.String(length=512), nullable=False),
        sa.Column("object_key", sa.String(length=1024), nullable=False),
        sa.Column("size_bytes", sa.BigInteger(), nullable=True),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(
            ["run_id"], ["training_runs.id"], name=op.f("fk_training_checkpoints_run_id_training_runs")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_training_checkpoints")),
        sa.UniqueConstraint("tinker_path", name=op.f("uq_training_checkpoints_tinker_path")),
    )
    with op.batch_alter_table("training_checkpoints", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_training_checkpoints_project_id"), ["project_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_training_checkpoints_run_id"), ["run_id"], unique=False)

    op.create_table(
        "training_run_metrics",
        sa.Column("run_id", sa.String(length=160), nullable=False),
        sa.Column("step", sa.Integer(), nullable=False),
        sa.Column("metrics", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(
            ["run_id"], ["training_runs.id"], name=op.f("fk_training_run_metrics_run_id_training_runs")
        ),
        sa.PrimaryKeyConstraint("run_id", "step", name=op.f("pk_training_run_metrics")),
    )


def downgrade() -> None:
    op.drop_table("training_run_metrics")
    with op.batch_alter_table("training_checkpoints", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_training_checkpoints_run_id"))
        batch_op.drop_index(batch_op.f("ix_training_checkpoints_project_id"))

    op.drop_table("training_checkpoints")
    with op.batch_alter_table("training_runs", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_training_runs_session_id"))
        batch_op.drop_index(batch_op.f("ix_training_runs_project_id"))

    op.drop_table("training_runs")
    with op.batch_alter_table("training_requests", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_training_requests_result_expires_at"))
        batch_op.drop_index(batch_op.f("ix_training_requests_status"))
        batch_op.drop_index("ix_training_requests_target_kind")
        batch_op.drop_index("ix_training_requests_session_status_seq")
        batch_op.drop_index(batch_op.f("ix_training_requests_project_id"))

    op.drop_table("training_requests")
    with op.batch_alter_table("sampling_sessions", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_sampling_sessions_session_id"))
        batch_op.drop_index(batch_op.f("ix_sampling_sessions_project_id"))

    op.drop_table("sampling_sessions")
    with op.batch_alter_table("training_sessions", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_training_sessions_status"))
        batch_op.drop_index(batch_op.f("ix_training_sessions_lease_expires_at"))
        batch_op.drop_index(batch_op.f("ix_training_sessions_project_id"))

    op.drop_table("training_sessions")
