"""Adaptive jobs: the batch limits an elastic job's agent picks within (Pollux's and Sia's), and its most GPUs.

Revision ID: 0004
Revises: 0003
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

COLUMNS = ("batch_size", "max_batch_size", "min_local_bsz", "max_local_bsz", "max_gpus")


def upgrade() -> None:
    for name in COLUMNS:
        op.add_column("jobs", sa.Column(name, sa.Integer, nullable=True))


def downgrade() -> None:
    for name in reversed(COLUMNS):
        op.drop_column("jobs", name)
