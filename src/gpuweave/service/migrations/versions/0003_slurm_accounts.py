"""A user's Slurm account and QoS: the slurm executor submits the user's jobs with them (sbatch --account, --qos).

Revision ID: 0003
Revises: 0002
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

COLUMNS = ("slurm_account", "slurm_qos")


def upgrade() -> None:
    for name in COLUMNS:
        op.add_column("users", sa.Column(name, sa.String(64), nullable=True))


def downgrade() -> None:
    for name in reversed(COLUMNS):
        op.drop_column("users", name)
