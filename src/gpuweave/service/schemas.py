"""The REST API's request and response bodies (pydantic): every field bounded, so bad input is a 422 naming it."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, field_validator, model_validator

from gpuweave.checks import SERVICE_REFUSED, finite_options

JOB_NAME = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$"
PRINTABLE = r"^[^\x00-\x1f\x7f]+$"  # no control characters (PostgreSQL refuses NUL in text)
GPU_TYPE = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,31}$"
GpuType = Annotated[str, StringConstraints(pattern=GPU_TYPE)]
State = Literal["queued", "running", "checkpointing", "preempted", "done", "failed", "cancelled"]


class JobSubmit(BaseModel):
    """A job to run: what, on how many GPUs of which types, how long, by when, how important."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=JOB_NAME, description="a label (letters, digits, '.', '_', '-')")
    program: str = Field(
        "synthetic",
        min_length=1,
        max_length=1024,
        pattern=PRINTABLE,
        description="'synthetic' or 'torch' (bundled, arguments may follow) or a command (admins, or --allow-commands)",
    )
    job_type: str = Field(
        min_length=1, max_length=128, pattern=PRINTABLE, description="job type of the profile store (GET /job-types)"
    )
    gpus: int = Field(1, ge=1, le=4096, description="GPUs the job needs (gang: all or none)")
    gpu_types: list[GpuType] | None = Field(
        None, min_length=1, max_length=16, description="allowed GPU types (default: any type of the cluster)"
    )
    steps: int = Field(ge=1, le=10**12, description="training steps (iterations) to run")
    deadline_s: float | None = Field(
        None, gt=0, le=1e12, allow_inf_nan=False, description="seconds after submission (simulated clock)"
    )
    priority: float = Field(1.0, gt=0, le=1e6, allow_inf_nan=False, description="weight; larger is more important")
    gpu_milli: int | None = Field(
        None,
        ge=1,
        le=1000,
        description="share of each GPU in milli-GPUs, below 1000 for 1-GPU jobs only (a service "
        "with a task placement: --placement-rule)",
    )
    cpu_milli: int | None = Field(
        None, ge=1, le=10**9, description="CPU in milli-cores (a service with a task placement)"
    )
    memory_mib: int | None = Field(None, ge=1, le=10**12, description="memory in MiB (a service with a task placement)")
    batch_size: int | None = Field(
        None, ge=1, le=10**9, description="an adaptive job: its initial global batch (with the three below)"
    )
    max_batch_size: int | None = Field(None, ge=1, le=10**9, description="an adaptive job: its largest global batch")
    min_local_bsz: int | None = Field(None, ge=1, le=10**9, description="an adaptive job: its smallest batch per GPU")
    max_local_bsz: int | None = Field(None, ge=1, le=10**9, description="an adaptive job: its largest batch per GPU")
    max_gpus: int | None = Field(
        None, ge=1, le=4096, description="an adaptive job: the most GPUs a goodput policy may give it"
    )

    @model_validator(mode="after")
    def _fraction_of_one_gpu(self) -> JobSubmit:
        if self.gpu_milli is not None and self.gpu_milli < 1000 and self.gpus > 1:
            raise ValueError("gpu_milli: a share of a GPU (below 1000) is for 1-GPU jobs only")
        return self


class PlacementPart(BaseModel):
    node: str
    gpu_type: str
    gpus: int


class Attempt(BaseModel):
    number: int
    kind: str
    placement: list[PlacementPart]
    forked: bool
    started_at: float
    ended_at: float | None
    saved_steps: int | None
    outcome: str | None


class Job(BaseModel):
    id: int
    name: str
    user: str
    state: State
    program: str
    job_type: str
    gpus: int
    gpu_types: list[str] | None
    gpu_milli: int | None = None
    cpu_milli: int | None = None
    memory_mib: int | None = None
    batch_size: int | None = None
    max_batch_size: int | None = None
    min_local_bsz: int | None = None
    max_local_bsz: int | None = None
    max_gpus: int | None = None
    steps: int
    committed_steps: int = Field(description="steps saved in checkpoints and committed")
    steps_done: int = Field(description="committed steps plus those the running attempt reported")
    progress: float = Field(description="steps_done / steps")
    priority: float
    deadline_s: float | None
    submitted_at: float
    started_at: float | None
    ended_at: float | None
    attempts: int
    restarts: int
    placement: list[PlacementPart] | None
    held: str = Field(description="why the job waits outside the policy's queue (a quota), or empty")
    reason: str
    cancel_requested: bool
    energy_j: float
    cost: float


class JobDetail(Job):
    history: list[Attempt]


class JobList(BaseModel):
    jobs: list[Job]
    total: int


class NodeJob(BaseModel):
    id: int | None = Field(description="None for another user's job")
    name: str | None
    user: str | None
    gpus: int
    share: float = Field(1.0, description="the part of each of its GPUs the job holds (a shared run's task: < 1)")


class Node(BaseModel):
    index: int
    name: str
    gpu_type: str
    gpus: int
    busy: float = Field(description="GPUs in use: a GPU shared by tasks counts the shares they hold")
    jobs: list[NodeJob]


class PolicyIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=64, pattern=r"^[a-z0-9-]+$")
    options: dict[str, Any] = Field(default_factory=dict, max_length=32)

    @field_validator("options")
    @classmethod
    def _finite(cls, value: dict[str, Any]) -> dict[str, Any]:
        # the request body is read with Python's json, which takes Infinity and NaN (a JSON column stores null)
        return finite_options(value, SERVICE_REFUSED)


class Policy(BaseModel):
    name: str
    options: dict[str, Any]
    round_length: float | None
    version: int
    available: list[str]


class Event(BaseModel):
    id: int
    at: float
    sim: float | None
    kind: str
    job_id: int | None
    user: str | None
    detail: dict[str, Any]


class Me(BaseModel):
    name: str
    admin: bool
    max_running_gpus: int | None
    max_queued_jobs: int | None
    queued_jobs: int
    running_gpus: int
    job_memory_bytes: int | None = Field(
        None, description="host memory each worker of your jobs may allocate (local executor; None: no limit)"
    )
    job_cpu_seconds: int | None = Field(
        None, description="CPU seconds each worker of your jobs may use (local executor; None: no limit)"
    )


class Problem(BaseModel):
    detail: str
    field: str | None = None


class Health(BaseModel):
    status: Literal["starting", "ok", "failed"] = Field(
        description="starting: recovering from the last run (HTTP 503); ok: the scheduling loop runs (HTTP 200); "
        "failed: it does not (HTTP 503)"
    )
    ok: bool
    scheduler: bool | None = Field(description="the scheduling loop's thread is alive (null: an API-only app)")
    version: str
