"""What ``gpuweave serve`` runs with: every flag of the command, checked before anything starts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from gpuweave.executors import known_executor
from gpuweave.live.config import ExecutorSection, LiveConfig

DEFAULT_PORT = 8765


class ServiceConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    db: str = Field(description="database URL (sqlite:///PATH or postgresql://USER@HOST/DB)")
    data_dir: Path = Field(description="checkpoints, worker channels and logs")
    host: str = "127.0.0.1"
    port: int = Field(DEFAULT_PORT, ge=0, le=65535)
    executor: str = "local"  # a name in gpuweave.executors.EXECUTORS
    address: str | None = None  # Ray cluster address (ray executor)
    cluster: str = "gavel-60"
    policy: str | None = None  # None: the policy stored in the database, else fifo
    policy_options: dict[str, Any] = Field(default_factory=dict)
    seed: int = 0
    restart_delay: float = Field(10.0, ge=0)
    time_scale: float = Field(1.0, gt=0)
    checkpoint_every: float = Field(5.0, gt=0)
    max_retries: int = Field(2, ge=0)
    report_timeout: float = Field(30.0, gt=0)
    stop_timeout: float = Field(30.0, gt=0, description="wall seconds a stopped worker may take to exit")
    poll_interval: float = Field(0.05, gt=0)
    sync_interval: float = Field(0.2, gt=0, description="wall seconds between reads of new submissions")
    sample_interval: float = Field(1.0, gt=0, description="wall seconds between utilisation samples")
    default_max_running_gpus: int | None = Field(None, ge=1)
    default_max_queued_jobs: int | None = Field(None, ge=1)
    allow_commands: bool = False  # users (not only admins) may submit their own commands
    max_body_bytes: int = Field(64 * 1024, ge=1024)

    @field_validator("executor")
    @classmethod
    def _known_executor(cls, value: str) -> str:
        return known_executor(value)

    def live_config(self, policy: str, options: dict[str, Any]) -> LiveConfig:
        """The live runtime's config for this service (no trace: jobs come from the database)."""
        section = ExecutorSection(
            kind=self.executor,  # informational: the service builds the executor (server.open_executor)
            program="synthetic",
            time_scale=self.time_scale,
            checkpoint_every=self.checkpoint_every,
            max_retries=self.max_retries,
            report_timeout=self.report_timeout,
            stop_timeout=self.stop_timeout,
            poll_interval=self.poll_interval,
        )
        return LiveConfig(
            policy=policy,
            policy_options=options,
            cluster=self.cluster,
            seed=self.seed,
            restart_delay=self.restart_delay,
            executor=section,
        )
