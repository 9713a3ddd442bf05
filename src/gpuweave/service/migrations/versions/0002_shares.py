"""Tasks sharing GPUs: a job's share of each GPU (milli-GPUs), CPU (milli-cores) and memory (MiB), all optional.

Revision ID: 0002
Revises: 0001
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

SHARE_COLUMNS = ("gpu_milli", "cpu_milli", "memory_mib")


def upgrade() -> None:
    for name in SHARE_COLUMNS:
        op.add_column("jobs", sa.Column(name, sa.Integer, nullable=True))


def downgrade() -> None:
    for name in reversed(SHARE_COLUMNS):
        op.drop_column("jobs", name)
