"""jobs.resources and the multi-node rendezvous: devices per node, nodes, and who joined the current attempt

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-25

A job asks for ``resources`` (``{"devices": N, "nodes": M}``, runtime.internal.Resources); null on older rows
means one device on one node. A multi-node attempt's claiming worker publishes where its torchrun rendezvous
listens (``rendezvous_endpoint``) and the other nodes join in order (``rendezvous_nodes``: their worker ids,
node rank i + 1); each claim clears both.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.add_column(sa.Column("resources", sa.JSON(), nullable=True))
        batch.add_column(sa.Column("rendezvous_endpoint", sa.String(length=300), nullable=True))
        batch.add_column(sa.Column("rendezvous_nodes", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.drop_column("rendezvous_nodes")
        batch.drop_column("rendezvous_endpoint")
        batch.drop_column("resources")
