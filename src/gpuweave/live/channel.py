"""The worker protocol: what a worker tells the runtime, through one small JSON file per attempt.

A worker rewrites ``status.json`` in its channel directory (write to a temporary file, then rename, so the
runtime never reads half a file). The runtime asks for a checkpoint by creating ``checkpoint-request`` in the
same directory, and asks a worker to checkpoint and exit with SIGTERM. Steps count from the start of the attempt;
``checkpoint_steps`` is the attempt's step count saved in the last checkpoint (what a retry resumes from).
A file channel needs the runtime and the workers to share a filesystem (one machine, or a shared mount).
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

STATUS_FILE = "status.json"
CHECKPOINT_REQUEST = "checkpoint-request"
FAILURE_FILE = "failure.json"


@dataclass(slots=True)
class WorkerStatus:
    steps: int = 0  # steps done in this attempt
    steps_per_s: float = 0.0  # wall-clock steps per second, measured by the worker
    checkpoint_steps: int = 0  # attempt steps saved in the last checkpoint
    first_step_wall: float | None = None  # time.time() when the first step was reported
    error: str = ""
    # Gradient statistics (gpuweave.workload.goodput), from a worker that measures them (api.report_gradients):
    # the global batch of its steps, the batch its efficiency is relative to, and the running estimates
    batch_size: int = 0
    init_batch_size: int = 0
    grad_sqr: float | None = None
    grad_var: float | None = None
    scaled_steps: bool = False  # the steps are steps at the initial batch (AdaScale's progress)
    # an adaptive job's profile (api.report_step_times): mean wall seconds per synchronising step, and of its sync
    step_time: float | None = None
    sync_time: float | None = None


def _write(channel: Path, name: str, record: WorkerStatus | RankFailure) -> None:
    """A record of the channel as one JSON file, replaced whole (its reader never sees half of it)."""
    tmp = channel / f".{name}.{os.getpid()}"
    tmp.write_text(json.dumps(asdict(record)))
    os.replace(tmp, channel / name)


def _read(channel: Path, name: str) -> dict[str, Any] | None:
    try:
        data: dict[str, Any] = json.loads((channel / name).read_text())
    except FileNotFoundError:
        return None
    return data


def write_status(channel: Path, status: WorkerStatus) -> None:
    _write(channel, STATUS_FILE, status)


def read_status(channel: Path) -> WorkerStatus | None:
    """The worker's last status, or None before its first report."""
    data = _read(channel, STATUS_FILE)
    return None if data is None else WorkerStatus(**data)


@dataclass(slots=True)
class RankFailure:
    """A gang agent's account of its node's first failed rank, as torchrun's error file gives it: which rank, its
    exit status (``-N``: signal N) and when it exited (``time.time()``). The runtime names the gang's crash after the
    earliest of its nodes' failures: a rank's death fails its peers' collectives a few milliseconds later."""

    rank: int
    local_rank: int
    status: int
    time: float


def write_failure(channel: Path, failure: RankFailure) -> None:
    _write(channel, FAILURE_FILE, failure)


def read_failure(channel: Path) -> RankFailure | None:
    """The node's earliest failure record, or None (no agent, no failed rank, or an agent killed before it wrote).
    A node agent that supervises all its ranks writes one, in the node's channel; agents of one rank each (a Ray
    actor or an ``srun`` task per rank: :mod:`gpuweave.live.gang`) write theirs in their rank's own channel
    (``local-<j>``), so a node may hold several."""
    records = [_read(folder, FAILURE_FILE) for folder in (channel, *sorted(channel.glob("local-*")))]
    found = [RankFailure(**data) for data in records if data is not None]
    return min(found, key=lambda record: record.time, default=None)


def request_checkpoint(channel: Path) -> None:
    (channel / CHECKPOINT_REQUEST).touch()
