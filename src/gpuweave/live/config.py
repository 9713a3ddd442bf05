"""The live run config: exactly what ``gpuweave simulate`` reads, plus an ``executor`` section.

``executor.program`` says what a job runs unless its trace row has a ``program`` column: ``synthetic`` (paced
steps, no torch), ``torch`` (the bundled PyTorch trainer), a Python script using :mod:`gpuweave.live.api`, or an
executable; arguments may follow, shell-style. Programs are checked before anything starts.
"""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from gpuweave.checks import RUN_SETTINGS, finite_options, validation_error
from gpuweave.cluster.config import SimulationConfig, beside_config
from gpuweave.errors import InputError
from gpuweave.executors import known_executor
from gpuweave.files import load_yaml

BUILTIN_PROGRAMS = {
    "synthetic": "gpuweave.live.workers.synthetic",
    "torch": "gpuweave.live.workers.torch_train",
}


class SlurmSection(BaseModel):
    """Settings of the ``slurm`` executor (docs/slurm.md)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    partition: str | None = Field(None, description="Slurm partition of every job (default: Slurm's default)")
    account: str | None = Field(None, description="Slurm account charged for every job")
    qos: str | None = Field(None, description="Slurm quality of service of every job (sbatch --qos)")
    sbatch_args: list[str] = Field(default_factory=list, description="extra sbatch options, e.g. --time=02:00:00")
    gpus: Literal["auto", "emulated", "real"] = Field(
        "auto", description="auto: real when NVML sees GPUs here; emulated: workers pace their steps"
    )
    poll_interval: float = Field(0.2, ge=0.01, le=3600, description="wall seconds between squeue polls")


class LocalSection(BaseModel):
    """Settings of the ``local`` executor (docs/live.md)."""

    model_config = ConfigDict(extra="forbid")

    namespaces: list[str] = Field(
        default_factory=list,
        description="one network namespace per cluster node (in node order) whose workers run in it, e.g. a "
        "`gpuweave testbed` cluster's; empty: every node on this host's network",
    )


class ExecutorSection(BaseModel):
    # finite, physical numbers (gpuweave.checks): a day is the longest sensible wall-clock interval here
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    kind: str = Field(
        "local", description="executor: a name in gpuweave.executors.EXECUTORS (the CLI's --executor overrides it)"
    )
    program: str = Field("synthetic", description="what every job runs unless its trace row names a program")
    time_scale: float = Field(1.0, gt=0, le=1e9, description="simulated seconds per wall-clock second")
    checkpoint_every: float = Field(
        5.0, gt=0, le=86400, description="wall seconds between a worker's periodic checkpoints"
    )
    max_retries: int = Field(2, ge=0, le=1000, description="restarts of a crashed worker before its job fails")
    report_timeout: float = Field(30.0, gt=0, le=86400, description="wall seconds a worker may go without reporting")
    launch_timeout: float | None = Field(
        None,
        gt=0,
        le=86400,
        description="wall seconds a launched attempt may take to report its first step (default: report_timeout)",
    )
    stop_timeout: float = Field(
        30.0, gt=0, le=86400, description="wall seconds a stopped worker may take to exit before it is killed"
    )
    ranks: Literal["per-gpu", "per-node"] = Field(
        "per-gpu",
        description="processes of a job: one rank per GPU, as torchrun --nproc-per-node=gpu starts them, or one per "
        "node holding the node's GPUs (--nproc-per-node=1); more than one rank form one torch.distributed gang",
    )
    measured_rates: bool = Field(True, description="policies see measured steps/s per GPU type once known")
    poll_interval: float = Field(0.05, ge=0.001, le=3600, description="wall seconds between polls of the workers")
    local: LocalSection = Field(default_factory=LocalSection, description="settings of the local executor")
    slurm: SlurmSection = Field(default_factory=SlurmSection, description="settings of the slurm executor")

    @field_validator("kind")
    @classmethod
    def _known_kind(cls, value: str) -> str:
        return known_executor(value, field="executor.kind")


class LiveConfig(SimulationConfig):
    executor: ExecutorSection = Field(default_factory=ExecutorSection)

    @field_validator("policy_options")
    @classmethod
    def _finite_options(cls, value: dict[str, Any]) -> dict[str, Any]:
        return finite_options(value, RUN_SETTINGS)


def load_live_config(path: str | Path) -> LiveConfig:
    path = Path(path)
    data = load_yaml(path, what="run config file") or {}
    if not isinstance(data, dict):
        raise InputError("a run config must be a mapping of settings (policy: NAME, ...)", file=path)
    try:
        config = LiveConfig.model_validate(data)
    except ValidationError as exc:
        raise validation_error(exc, path) from None
    return beside_config(config, path)


def program_argv(program: str, base: Path | None = None) -> list[str]:
    """The command line of a job's program; InputError if it is missing or not executable."""
    try:
        words = shlex.split(program)
    except ValueError as exc:
        raise InputError(f"cannot parse program {program!r}: {exc}", field="executor.program") from None
    if not words:
        raise InputError("empty program", field="executor.program")
    head, rest = words[0], words[1:]
    if head in BUILTIN_PROGRAMS:
        return [sys.executable, "-m", BUILTIN_PROGRAMS[head], *rest]
    path = Path(head)
    if not path.is_absolute() and base is not None and (base / path).exists():
        path = base / path
    if not path.is_file():
        raise InputError(f"program {head!r} does not exist (or is not a file)", field="executor.program")
    if path.suffix == ".py":
        return [sys.executable, str(path.resolve()), *rest]
    if not os.access(path, os.X_OK):
        raise InputError(f"program {head!r} is not executable", field="executor.program")
    return [str(path.resolve()), *rest]
