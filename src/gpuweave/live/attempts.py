"""What the runtime knows about each job's workers: attempts, forked copies, and their commit arithmetic.

An attempt is one launch of a job on one placement: one copy (workers on every node of the placement, rank 0
reports) or, for a HadarE fork, several copies on whole-copy slots, each with its share of the remaining steps.
When every worker of an attempt has exited, the steps saved in its checkpoints are committed to the job.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from gpuweave.cluster.state import JobState, Placement
from gpuweave.live.channel import WorkerStatus, read_status
from gpuweave.live.consolidate import consolidate_checkpoints
from gpuweave.live.executor import LaunchSpec


@dataclass(slots=True)
class Worker:
    spec: LaunchSpec
    handle: object
    code: int | None = None
    given: tuple[int, ...] | None = None  # a shared run's task: the GPU slots the cluster gave it, once read


@dataclass(slots=True)
class Copy:
    index: int
    target: int
    checkpoint: Path
    workers: list[Worker]
    status: WorkerStatus | None = None

    @property
    def channel(self) -> Path:
        return self.workers[0].spec.channel

    def refresh(self) -> None:
        self.status = read_status(self.channel) or self.status

    @property
    def steps(self) -> int:
        return self.status.steps if self.status else 0

    @property
    def saved(self) -> int:
        return self.status.checkpoint_steps if self.status else 0


@dataclass(slots=True)
class Attempt:
    number: int
    kind: str  # start, resume, move, retry, fork-round
    placement: Placement
    forked: bool
    copies: list[Copy]
    decided_wall: float
    decided_sim: float
    last_progress_wall: float
    first_step_wall: float | None = None
    seen_steps: int = 0
    stopping: bool = False
    stop_wall: float | None = None  # when the runtime asked the workers to stop (SIGTERM)
    crash: str = ""
    failed_wall: float | None = None  # when the runtime first saw one of its workers fail (the crash verdict waits)
    node_lost: bool = False  # a node of the placement disappeared: the job went back to the queue
    lost_node: str = ""  # its name
    requeued: str = ""  # why the cluster manager ended it though nothing failed (Executor.ended_by_cluster)
    ended_sim: float | None = None  # simulated time its last worker was seen gone (None: running, or journalled)
    # an adaptive job's first copy's reports, one per ADAPTATION_EVERY_S simulated seconds: (simulated time, status),
    # the rows of its adaptation.csv (gpuweave.live.results.adaptations)
    samples: list[tuple[float, WorkerStatus]] = field(default_factory=list)

    @property
    def workers(self) -> list[Worker]:
        return [w for c in self.copies for w in c.workers]

    @property
    def steps(self) -> int:
        return sum(c.steps for c in self.copies)

    @property
    def ended(self) -> bool:
        return all(w.code is not None for w in self.workers)


@dataclass(slots=True)
class LiveJob:
    js: JobState
    argv: list[str]
    target: int  # total steps of the job
    checkpoint: Path  # the job's resume point (consolidated for forks)
    committed: int = 0
    crashes: int = 0
    attempts: int = 0
    attempt: Attempt | None = None
    next_start: tuple[Placement, str, float, float] | None = None  # placement, kind, decided wall, decided sim
    failed: str = ""
    done: bool = False
    cancelled: bool = False
    history: list[Attempt] = field(default_factory=list)

    @property
    def remaining(self) -> int:
        return max(0, self.target - self.committed)

    @property
    def finished(self) -> bool:
        """Done, failed or cancelled: the runtime launches nothing more for it."""
        return self.done or bool(self.failed) or self.cancelled


def attempt_outcome(job: LiveJob, attempt: Attempt) -> str:
    """How an attempt ended, for live.csv: ``crash``, ``node-lost``, ``requeued`` (by the cluster manager, e.g.
    Slurm after a node failure), ``stopped`` (preempted, moved or cancelled) or ``done``. The attempt that finished
    the job is ``done`` even when a stop reached it as it finished (seen on a real GPU: Hadar's round gave the GPU to
    the next job just as the running one wrote its last checkpoint)."""
    if attempt.crash:
        return "crash"
    if attempt.node_lost:
        return "node-lost"
    if attempt.requeued:
        return "requeued"
    if job.done and job.history and attempt is job.history[-1]:
        return "done"
    return "stopped" if attempt.stopping else "done"


def attempt_cause(attempt: Attempt) -> str:
    """Why an attempt ended other than by finishing, for live.csv's ``cause``: the crash (a worker's exit status
    and its log's last lines, or the silence that timed out), the node that was lost, or empty."""
    if attempt.crash:
        return attempt.crash
    if attempt.node_lost:
        return f"node {attempt.lost_node} lost" if attempt.lost_node else "node lost"
    return attempt.requeued


def commit(job: LiveJob, attempt: Attempt) -> int:
    """Add the steps the attempt's checkpoints hold to the job; a fork's copies are consolidated first."""
    for copy in attempt.copies:
        copy.refresh()
    return commit_saved(job, attempt.forked, [c.checkpoint for c in attempt.copies], [c.saved for c in attempt.copies])


def commit_saved(job: LiveJob, forked: bool, checkpoints: list[Path], saved: list[int]) -> int:
    if forked:
        consolidate_checkpoints(checkpoints, saved, job.checkpoint)
    job.committed = min(job.target, job.committed + sum(saved))
    return sum(saved)


def split_steps(remaining: int, rates: list[float]) -> list[int]:
    """Integer shares of ``remaining`` in proportion to ``rates`` (largest remainders), summing to it."""
    total = sum(rates)
    exact = [remaining * r / total for r in rates]
    shares = [int(x) for x in exact]
    order = sorted(range(len(rates)), key=lambda i: exact[i] - shares[i], reverse=True)
    for i in order[: remaining - sum(shares)]:
        shares[i] += 1
    return shares
