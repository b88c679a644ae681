"""evals, eval_runs, eval_output_items: OpenAI-shaped evals run by the workers

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-25

An eval holds the item schema and the testing criteria (the graders jobs use); a run samples a model (base,
fine-tuned or a checkpoint) on a file's items and grades every sample; each item's result is a row of
eval_output_items (unique per run and line, so a retried post never duplicates).
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "evals",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("project_id", sa.String(length=64), nullable=False),
        sa.Column("name", sa.String(length=256), nullable=True),
        sa.Column("data_source_config", sa.JSON(), nullable=False),
        sa.Column("testing_criteria", sa.JSON(), nullable=False),
        sa.Column("metadata", sa.JSON(), nullable=True),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_evals")),
    )
    op.create_index(op.f("ix_evals_project_id"), "evals", ["project_id"], unique=False)
    op.create_table(
        "eval_runs",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("eval_id", sa.String(length=64), nullable=False),
        sa.Column("project_id", sa.String(length=64), nullable=False),
        sa.Column("name", sa.String(length=256), nullable=True),
        sa.Column("model", sa.String(length=512), nullable=False),
        sa.Column("data_source", sa.JSON(), nullable=False),
        sa.Column("target", sa.JSON(), nullable=False),
        sa.Column("file_key", sa.String(length=1024), nullable=False),
        sa.Column("status", sa.String(length=32), nullable=False),
        sa.Column("result_counts", sa.JSON(), nullable=True),
        sa.Column("per_testing_criteria_results", sa.JSON(), nullable=True),
        sa.Column("usage", sa.JSON(), nullable=True),
        sa.Column("error", sa.JSON(), nullable=True),
        sa.Column("metadata", sa.JSON(), nullable=True),
        sa.Column("claim_id", sa.String(length=64), nullable=True),
        sa.Column("lease_expires_at", sa.BigInteger(), nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("enqueued_at", sa.BigInteger(), nullable=True),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.Column("started_at", sa.BigInteger(), nullable=True),
        sa.Column("finished_at", sa.BigInteger(), nullable=True),
        sa.ForeignKeyConstraint(["eval_id"], ["evals.id"], name=op.f("fk_eval_runs_eval_id_evals")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_eval_runs")),
    )
    op.create_index(op.f("ix_eval_runs_eval_id"), "eval_runs", ["eval_id"], unique=False)
    op.create_index(op.f("ix_eval_runs_project_id"), "eval_runs", ["project_id"], unique=False)
    op.create_index(op.f("ix_eval_runs_status"), "eval_runs", ["status"], unique=False)
    op.create_table(
        "eval_output_items",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("run_id", sa.String(length=64), nullable=False),
        sa.Column("datasource_item_id", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("result", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(["run_id"], ["eval_runs.id"], name=op.f("fk_eval_output_items_run_id_eval_runs")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_eval_output_items")),
        sa.UniqueConstraint("run_id", "datasource_item_id", name=op.f("uq_eval_output_items_run_id")),
    )
    op.create_index(op.f("ix_eval_output_items_run_id"), "eval_output_items", ["run_id"], unique=False)


def downgrade() -> None:
    op.drop_index(op.f("ix_eval_output_items_run_id"), table_name="eval_output_items")
    op.drop_table("eval_output_items")
    for ix in ("status", "project_id", "eval_id"):
        op.drop_index(op.f(f"ix_eval_runs_{ix}"), table_name="eval_runs")
    op.drop_table("eval_runs")
    op.drop_index(op.f("ix_evals_project_id"), table_name="evals")
    op.drop_table("evals")
