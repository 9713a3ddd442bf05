"""The executor interface: start one worker process for a placement, watch it, signal it, end it.

A worker is one process of one job attempt on one node, holding ``gpus`` GPUs of that node's model (for a gang of
several ranks, the node agent that starts them: :mod:`gpuweave.live.gang`). An executor sets ``GPUWEAVE_NODE_ADDR``
for the worker to the address its node is reached at by the gang's other nodes. Executors
differ only in where the process runs (:mod:`gpuweave.live.local`: a subprocess here; :mod:`gpuweave.live.ray_executor`:
a process started by a Ray task on the chosen Ray node; :mod:`gpuweave.live.slurm`: a Slurm batch job). Progress
never travels through the executor: the worker writes it to its channel directory (:mod:`gpuweave.live.channel`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar

if TYPE_CHECKING:
    from gpuweave.hardware.cluster_spec import Node

LOG_FILE = "worker.log"


@dataclass(frozen=True, slots=True)
class LaunchSpec:
    job_id: str
    attempt: int
    copy: int  # forked copy index (0 when not forked)
    rank: int  # node rank inside a multi-node placement
    node: int
    node_name: str
    gpu_model: str
    gpus: int
    argv: tuple[str, ...]
    channel: Path
    env: dict[str, str] = field(default_factory=dict)
    # the job's trace attributes (the slurm executor reads sbatch_args)
    attrs: dict[str, Any] = field(default_factory=dict)
    # A shared run (tasks sharing GPUs): the node's GPU slots the book's ledger gave the task (empty for a CPU-only
    # task) and the part of each it holds (gpuweave.cluster.sharing.ledger). None: whole GPUs, which the executor
    # hands out itself.
    gpu_slots: tuple[int, ...] | None = None
    gpu_share: float = 1.0

    @property
    def gpu_amount(self) -> float:
        """The GPUs the worker holds, shares counted (``gpus`` on whole GPUs; 0.46 for a 460-milli task)."""
        return self.gpus * self.gpu_share

    @property
    def label(self) -> str:
        return f"{self.job_id}/a{self.attempt}/c{self.copy}/r{self.rank}"


H = TypeVar("H")  # an executor's handle of a launched worker


class Executor(ABC, Generic[H]):
    name: str = ""
    emulated: bool = True  # no real GPUs: workers pace their steps to the emulated GPU type
    # runs a shared run's tasks on the GPU slots and shares of LaunchSpec.gpu_slots/gpu_share (tasks sharing GPUs)
    shares_gpus: bool = False

    @abstractmethod
    def check_cluster(self, nodes: list[Node]) -> None:
        """Raise InputError, before anything starts, when the cluster config asks for what is not there."""

    @abstractmethod
    def launch(self, spec: LaunchSpec) -> H:
        """Start the worker; returns a handle for the calls below."""

    def launch_gang(self, specs: list[LaunchSpec]) -> list[H]:
        """Start the workers of one copy of an attempt (one per node of its placement) together. By default one
        :meth:`launch` each; an executor that can reserve a gang's resources at once (Ray's placement groups)
        overrides it."""
        return [self.launch(spec) for spec in specs]

    @abstractmethod
    def exit_code(self, handle: H) -> int | None:
        """The worker's exit status, or None while it runs."""

    @abstractmethod
    def terminate(self, handle: H) -> None:
        """SIGTERM: the worker checkpoints and exits."""

    @abstractmethod
    def kill(self, handle: H) -> None:
        """End the worker now (no checkpoint)."""

    def check_shares(self, nodes: list[Node]) -> None:
        """A shared run (after :meth:`check_cluster`): raise InputError when the cluster cannot hold shares of its
        GPUs. Only an executor with ``shares_gpus`` is asked; by default it can."""

    def can_launch(self, node: int, gpus: int) -> bool:
        """Whether ``gpus`` GPUs of ``node`` are free now. An executor that hands out GPUs itself answers False while
        a stopped worker still holds them (it checkpoints before it exits); Ray and Slurm queue a worker until its
        resources are free, so by default every launch may go ahead."""
        return True

    def ended_by_cluster(self, handle: H) -> str:
        """Why the cluster manager itself ended a worker that did not fail (Slurm requeued its job after a node
        failure or for a preemption of its own), or "" (by default nothing does). The runtime then starts the
        attempt again from its last checkpoint without counting a crash."""
        return ""

    def undecided(self, handle: H) -> bool:
        """Whether a worker that has not ended yet is known to have gone, its node's fate still unknown (Ray: its
        task failed with its Ray worker and GCS has not yet said whether the node died too). While any of a gang's
        workers is undecided the runtime holds the crash verdict its peers' failures would give, since a node lost
        is no crash. By default none is."""
        return False

    def given_gpus(self, handle: H) -> tuple[int, ...] | None:
        """The GPU slots of its node the cluster gave a shared run's worker, where the cluster chooses them (Slurm:
        the GPU its shards come from), once known; None: those of its LaunchSpec (``gpu_slots``), as by default.
        The runtime moves the task's share in the book's ledger to them (:meth:`ClusterBook.move_share`)."""
        return None

    def pid(self, handle: H) -> int | None:
        """The worker's process id where it runs on this machine (journalled for a restarted runtime)."""
        return None

    def lost_nodes(self) -> list[int]:
        """Cluster nodes found gone since the last call (their workers read as killed); each is reported once."""
        return []

    def close(self) -> None:
        """Release the executor's own resources (every worker has ended)."""

    def stats(self) -> dict[str, Any]:
        """Executor figures for summary.json's ``executor_stats`` (none unless the executor has its own)."""
        return {}


def log_tail(channel: Path, lines: int = 3) -> str:
    """The last lines of a worker's log, as one line (a failed job's reason)."""
    try:
        text = (channel / LOG_FILE).read_text(errors="replace").strip().splitlines()
    except FileNotFoundError:
        return ""
    return " | ".join(text[-lines:])
