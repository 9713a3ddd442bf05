"""What ``gpuweave serve`` runs with: every flag of the command, checked before anything starts.

A setting the service shares with a live run (``time_scale``, ``restart_delay``, ``seed``, ...) is the live
config's own field (:func:`_as_in`): the same bounds, default and description, so a value the service accepts is
one the live runtime it drives accepts too, and a bad one is refused here, in one line, before anything starts.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from gpuweave.checks import GPUS, POSITIVE_COUNT, SERVICE_REFUSED, finite_options
from gpuweave.cluster.config import SimulationConfig
from gpuweave.cluster.placements import known_placement
from gpuweave.errors import InputError
from gpuweave.executors import known_executor
from gpuweave.live.config import ExecutorSection, LiveConfig, SlurmSection
from gpuweave.live.local import WorkerLimits

DEFAULT_PORT = 8765
#: the host memory and CPU time a job of a user who is not an admin may take (local executor; 0: no limit)
DEFAULT_JOB_MEMORY_GIB = 2.0
DEFAULT_JOB_CPU_SECONDS = 86400
#: a wall-clock interval of the service's own loop: a day at most
MAX_INTERVAL_S = 86400


def _as_in(model: type[BaseModel], name: str) -> Any:
    """The field ``name`` of ``model`` (bounds, default, description): one definition per setting."""
    return copy.deepcopy(model.model_fields[name])


class ServiceConfig(BaseModel):
    # finite, physical numbers, as in the live config (gpuweave.checks)
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    db: str = Field(description="database URL (sqlite:///PATH or postgresql://USER@HOST/DB)")
    data_dir: Path = Field(description="checkpoints, worker channels and logs")
    host: str = "127.0.0.1"
    port: int = Field(DEFAULT_PORT, ge=0, le=65535)
    executor: str = "local"  # a name in gpuweave.executors.EXECUTORS
    address: str | None = None  # Ray cluster address (ray executor)
    # where the slurm executor's jobs go and who pays: the run config's executor.slurm fields (sbatch's options)
    slurm_partition: str | None = _as_in(SlurmSection, "partition")
    slurm_account: str | None = _as_in(SlurmSection, "account")
    slurm_qos: str | None = _as_in(SlurmSection, "qos")
    cluster: str = _as_in(SimulationConfig, "cluster")
    policy: str | None = None  # None: the policy stored in the database, else fifo
    policy_options: dict[str, Any] = _as_in(SimulationConfig, "policy_options")
    placement_rule: str | None = _as_in(SimulationConfig, "placement_rule")
    seed: int = _as_in(SimulationConfig, "seed")
    restart_delay: float = _as_in(SimulationConfig, "restart_delay")
    time_scale: float = _as_in(ExecutorSection, "time_scale")
    checkpoint_every: float = _as_in(ExecutorSection, "checkpoint_every")
    max_retries: int = _as_in(ExecutorSection, "max_retries")
    report_timeout: float = _as_in(ExecutorSection, "report_timeout")
    stop_timeout: float = _as_in(ExecutorSection, "stop_timeout")
    poll_interval: float = _as_in(ExecutorSection, "poll_interval")
    sync_interval: float = Field(
        0.2, gt=0, le=MAX_INTERVAL_S, description="wall seconds between reads of new submissions"
    )
    sample_interval: float = Field(1.0, gt=0, le=MAX_INTERVAL_S, description="wall seconds between utilisation samples")
    default_max_running_gpus: int | None = Field(None, ge=1, le=GPUS.hi)
    default_max_queued_jobs: int | None = Field(None, ge=1, le=POSITIVE_COUNT.hi)
    job_memory_gib: float = Field(
        DEFAULT_JOB_MEMORY_GIB,
        ge=0,
        le=1e6,
        description="GiB of host memory a non-admin user's job may allocate per worker (local executor; 0: no limit)",
    )
    job_cpu_seconds: int = Field(
        DEFAULT_JOB_CPU_SECONDS,
        ge=0,
        le=10**9,
        description="CPU seconds a non-admin user's worker may use (local executor; 0: no limit)",
    )
    allow_commands: bool = False  # users (not only admins) may submit their own commands
    max_body_bytes: int = Field(64 * 1024, ge=1024, le=64 * 2**20)

    @field_validator("executor")
    @classmethod
    def _known_executor(cls, value: str) -> str:
        return known_executor(value)

    @field_validator("placement_rule")
    @classmethod
    def _known_rule(cls, value: str | None) -> str | None:
        return known_placement(value)

    @field_validator("policy_options")
    @classmethod
    def _finite_options(cls, value: dict[str, Any]) -> dict[str, Any]:
        return finite_options(value, SERVICE_REFUSED)

    @model_validator(mode="after")
    def _slurm_settings_need_slurm(self) -> ServiceConfig:
        given = [name for name in ("slurm_partition", "slurm_account", "slurm_qos") if getattr(self, name)]
        if given and self.executor != "slurm":
            raise InputError(
                f"{given[0].replace('_', '-')} is for the slurm executor (--executor slurm)", field=given[0]
            )
        return self

    @model_validator(mode="after")
    def _options_have_a_policy(self) -> ServiceConfig:
        if self.policy_options and self.policy is None:
            raise InputError(
                "policy options need the policy they belong to: pass --policy NAME with them "
                "(without --policy the service keeps the policy and options stored in its database)",
                field="policy_options",
            )
        return self

    def worker_limits(self) -> WorkerLimits | None:
        """What a worker of a user who is not an admin may take on its host (None: no limit)."""
        memory = int(self.job_memory_gib * 2**30) or None
        cpu = self.job_cpu_seconds or None
        return WorkerLimits(memory, cpu) if memory or cpu else None

    def slurm_section(self) -> SlurmSection:
        """The slurm executor's settings: the partition, account and QoS every job of the service is submitted to."""
        return SlurmSection(partition=self.slurm_partition, account=self.slurm_account, qos=self.slurm_qos)

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
            slurm=self.slurm_section(),
        )
        return LiveConfig(
            policy=policy,
            policy_options=options,
            cluster=self.cluster,
            placement_rule=self.placement_rule,
            seed=self.seed,
            restart_delay=self.restart_delay,
            executor=section,
        )
