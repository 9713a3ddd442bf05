"""The first schema: users, tokens, jobs, attempts, events, samples, settings.

Revision ID: 0001
Revises:
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    _users()
    _jobs()
    _history()


def _users() -> None:
    op.create_table(
        "users",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("name", sa.String(64), nullable=False, unique=True),
        sa.Column("admin", sa.Boolean, nullable=False),
        sa.Column("max_running_gpus", sa.Integer, nullable=True),
        sa.Column("max_queued_jobs", sa.Integer, nullable=True),
        sa.Column("created_at", sa.Float, nullable=False),
    )
    op.create_table(
        "tokens",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("user_id", sa.Integer, sa.ForeignKey("users.id"), nullable=False),
        sa.Column("token_hash", sa.String(64), nullable=False, unique=True),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.Column("revoked", sa.Boolean, nullable=False),
    )
    op.create_index("ix_tokens_user_id", "tokens", ["user_id"])


def _jobs() -> None:
    op.create_table(
        "jobs",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("user_id", sa.Integer, sa.ForeignKey("users.id"), nullable=False),
        sa.Column("name", sa.String(128), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("program", sa.String(1024), nullable=False),
        sa.Column("job_type", sa.String(128), nullable=False),
        sa.Column("gpus", sa.Integer, nullable=False),
        sa.Column("gpu_types", sa.Text, nullable=True),
        sa.Column("steps", sa.Integer, nullable=False),
        sa.Column("priority", sa.Float, nullable=False),
        sa.Column("deadline_s", sa.Float, nullable=True),
        sa.Column("submitted_at", sa.Float, nullable=False),
        sa.Column("admitted", sa.Boolean, nullable=False),
        sa.Column("arrival", sa.Float, nullable=True),
        sa.Column("held", sa.String(256), nullable=False),
        sa.Column("placement", sa.Text, nullable=True),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("crashes", sa.Integer, nullable=False),
        sa.Column("committed", sa.Integer, nullable=False),
        sa.Column("first_start", sa.Float, nullable=True),
        sa.Column("restarts", sa.Integer, nullable=False),
        sa.Column("started_at", sa.Float, nullable=True),
        sa.Column("ended_at", sa.Float, nullable=True),
        sa.Column("end_sim", sa.Float, nullable=True),
        sa.Column("reason", sa.Text, nullable=False),
        sa.Column("cancel_requested", sa.Boolean, nullable=False),
        sa.Column("api_rev", sa.Integer, nullable=False),
        sa.Column("pending_sync", sa.Boolean, nullable=False),
        sa.Column("gpu_seconds", sa.Float, nullable=False),
        sa.Column("energy_j", sa.Float, nullable=False),
        sa.Column("cost", sa.Float, nullable=False),
    )
    op.create_index("ix_jobs_user_id", "jobs", ["user_id"])
    op.create_index("ix_jobs_state", "jobs", ["state"])
    op.create_index("ix_jobs_pending_sync", "jobs", ["pending_sync"])
    op.create_index("ix_jobs_admission", "jobs", ["admitted", "state"])


def _history() -> None:
    op.create_table(
        "attempts",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("job_id", sa.Integer, sa.ForeignKey("jobs.id"), nullable=False),
        sa.Column("number", sa.Integer, nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("placement", sa.Text, nullable=False),
        sa.Column("forked", sa.Boolean, nullable=False),
        sa.Column("copies", sa.Text, nullable=True),
        sa.Column("started_at", sa.Float, nullable=False),
        sa.Column("ended_at", sa.Float, nullable=True),
        sa.Column("saved", sa.Integer, nullable=True),
        sa.Column("outcome", sa.String(16), nullable=True),
        sa.UniqueConstraint("job_id", "number", name="uq_attempt_number"),
    )
    op.create_index("ix_attempts_job_id", "attempts", ["job_id"])
    op.create_table(
        "events",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("at", sa.Float, nullable=False),
        sa.Column("sim", sa.Float, nullable=True),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("job_id", sa.Integer, nullable=True),
        sa.Column("user_id", sa.Integer, nullable=True),
        sa.Column("detail", sa.Text, nullable=False),
    )
    op.create_index("ix_events_job_id", "events", ["job_id"])
    op.create_index("ix_events_user_id", "events", ["user_id"])
    op.create_table(
        "samples",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("at", sa.Float, nullable=False),
        sa.Column("sim", sa.Float, nullable=False),
        sa.Column("busy", sa.Text, nullable=False),
        sa.Column("power_w", sa.Float, nullable=False),
        sa.Column("energy_j", sa.Float, nullable=False),
        sa.Column("cost", sa.Float, nullable=False),
        sa.Column("queued", sa.Integer, nullable=False),
        sa.Column("running", sa.Integer, nullable=False),
    )
    op.create_table(
        "settings",
        sa.Column("key", sa.String(64), primary_key=True),
        sa.Column("value", sa.Text, nullable=False),
    )


def downgrade() -> None:
    for table in ("settings", "samples", "events", "attempts", "jobs", "tokens", "users"):
        op.drop_table(table)
