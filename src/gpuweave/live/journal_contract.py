"""The runtime's journal contract: every transition :class:`~gpuweave.live.runtime.LiveRuntime` reports.

The runtime tells its journal about each transition of a job and of its attempts, and a restarted runtime asks it
for what it held. Two journals implement :class:`RunJournal`: the file :class:`~gpuweave.live.journal.Journal`
(``journal.jsonl`` of ``gpuweave cluster run``) and the service's :class:`~gpuweave.service.ledger.Ledger` (the
database, which commits each transition before the runtime acts on it). The methods below are exactly the ones
the runtime calls; each docstring says when. A ``job`` is the runtime's
:class:`~gpuweave.live.attempts.LiveJob` (its book entry is ``job.js``), an ``attempt`` one launch of it
(:class:`~gpuweave.live.attempts.Attempt`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any

from gpuweave.cluster.state import Placement
from gpuweave.live.attempts import Attempt, LiveJob
from gpuweave.live.executor import Executor

if TYPE_CHECKING:
    from gpuweave.live.book import Action
    from gpuweave.live.runtime import LiveRuntime


class RunJournal(ABC):
    """Where the live runtime reports its transitions (see module docstring)."""

    @abstractmethod
    def resume(self, runtime: LiveRuntime, wall_now: float) -> float:
        """At the runtime's start, before its first step: restore what an earlier run of it journalled (jobs'
        committed steps, attempts, terminal states; the workers of attempts that never ended are asked to
        checkpoint, awaited and their checkpoints committed) and return the wall-clock origin of simulated
        time (``wall_now`` for a first start)."""

    @abstractmethod
    def launching(
        self, job: LiveJob, number: int, kind: str, placement: Placement, forked: bool, copies: list[dict[str, Any]]
    ) -> bool:
        """Before attempt ``number`` of ``job`` is launched on ``placement``, before any worker starts. ``kind``:
        ``start``, ``resume``, ``move``, ``retry`` or ``fork-round``; ``forked``: HadarE copies; ``copies``:
        each copy's planned ``checkpoint``, ``channel``, ``channels`` (one per rank) and ``pids`` (empty yet).
        False refuses the launch (the job was cancelled meanwhile): nothing starts."""

    @abstractmethod
    def attempt_started(self, job: LiveJob, attempt: Attempt, executor: Executor[Any]) -> None:
        """Once every worker of ``attempt`` was launched: what a restarted runtime needs to find and end them
        (checkpoints, channels, process ids from ``executor.pid``)."""

    @abstractmethod
    def stopping(self, job: LiveJob, attempt: Attempt) -> None:
        """Before the workers of ``attempt`` are asked to checkpoint and exit (a preemption, a move, the end of a
        HadarE round, a lost node, a service shutting down)."""

    @abstractmethod
    def attempt_ended(self, job: LiveJob, attempt: Attempt, saved: int) -> None:
        """Once every worker of ``attempt`` has exited (or was killed) and the ``saved`` steps its checkpoints
        hold were committed to ``job.committed``; for an attempt ended by its workers, before the runtime says
        what becomes of the job (done, failed, retried or waiting again). ``attempt.crash``, ``node_lost`` and
        ``stopping`` say why it ended."""

    @abstractmethod
    def job_done(self, job: LiveJob) -> None:
        """The job's committed steps reached its target (``job.js.end``: its simulated end). Terminal."""

    @abstractmethod
    def job_failed(self, job: LiveJob) -> None:
        """The job will not run again: its attempts crashed more often than ``max_retries`` allows, or its program
        cannot run (``job.failed``: why). Terminal."""

    @abstractmethod
    def job_cancelled(self, job: LiveJob) -> None:
        """Before a cancelled job's workers are killed (no checkpoint) and it leaves the cluster. Terminal."""

    @abstractmethod
    def decided(self, now: float, seconds: float, actions: list[Action]) -> None:
        """After a policy decision was applied at simulated time ``now`` (``seconds``: the policy's own time) and
        its ``actions`` (the book's starts, moves and stops) were handed to the jobs: stops asked for, starts
        waiting for their GPUs."""
