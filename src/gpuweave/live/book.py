"""The live runtime's cluster state, kept by the simulator's own bookkeeping so policies see the same view.

Problem: a policy must not know whether it is simulated. :class:`LiveBook` is a
:class:`~gpuweave.cluster.simulator.Simulator` whose clock is the wall clock (scaled) and whose progress comes
from worker reports instead of predicted finish times: a decision is validated and applied by the simulator's
``_apply`` (same gang, capacity and feasibility rules, same restart accounting), and the change it made to the
running set becomes the executor's actions. Complexity: O(jobs the decision names) per decision.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from gpuweave.cluster.decision import Decision
from gpuweave.cluster.simulator import Simulator
from gpuweave.cluster.state import JobState, Placement
from gpuweave.errors import InputError
from gpuweave.workload.job import Job


class _NoQueue:
    """Completion predictions are dropped: in a live run the workers say when a job is done."""

    def push(self, *_args) -> None:
        return None


@dataclass(frozen=True, slots=True)
class Action:
    kind: str  # "start" (was waiting), "move" (was running elsewhere) or "stop"
    job_id: str
    placement: Placement | None


class LiveBook(Simulator):
    """Cluster state for the live runtime (see module docstring)."""

    def add(self, job: Job) -> JobState:
        """A job handed over while the run goes on (the service); InputError on a duplicate id."""
        if job.job_id in self.by_id:
            raise InputError(f"duplicate job id '{job.job_id}'", field="job_id")
        js = JobState(job=job, remaining=float(job.work))
        self.states.append(js)
        self.by_id[job.job_id] = js
        return js

    def arrive(self, js: JobState) -> None:
        self.pending[js.job.job_id] = js

    def use_policy(self, policy) -> None:
        """Decisions come from ``policy`` from now on (its round length and forking rule with it)."""
        self.policy = policy
        self.round_length = policy.round_length
        self._forks = policy.forks_jobs

    def apply_decision(self, decision: Decision) -> list[Action]:
        before = {job_id: js.placement for job_id, js in self.running.items()}
        self._loop = _NoQueue()  # the simulator's _apply predicts completions on its loop; live, workers report
        self._apply(decision)
        actions = []
        for job_id in decision.preempt:
            if job_id not in self.running:
                actions.append(Action("stop", job_id, None))
        for job_id, js in self.running.items():
            old = before.get(job_id)
            if js.placement != old:
                actions.append(Action("start" if old is None else "move", job_id, js.placement))
                js.productive_start = math.inf  # no progress until the new workers report
        return actions

    def observe(self, js: JobState, remaining: float, rate: float) -> None:
        """A worker report: ``remaining`` steps left as of now, at ``rate`` steps per (simulated) second."""
        js.remaining = remaining
        js.rate = rate
        js.productive_start = self.now

    def set_remaining(self, js: JobState, remaining: float) -> None:
        """After a stop: the job resumes from its checkpoint, whatever the extrapolation said."""
        js.remaining = remaining

    def complete(self, js: JobState) -> None:
        """The job's work is done (it may have been preempted in the instant its last checkpoint landed)."""
        if js.job.job_id in self.running:
            self._complete(js)
        else:
            self.pending.pop(js.job.job_id, None)
            js.remaining = 0.0
            js.end = self.now

    def fail(self, js: JobState) -> None:
        """Take a failed job out of the cluster (it keeps ``end = None``)."""
        job_id = js.job.job_id
        if job_id in self.running:
            self._vacate(js)
            del self.running[job_id]
        self.pending.pop(job_id, None)

    def lose_node(self, index: int) -> list[str]:
        """A node that disappeared: the jobs on it go back to the queue (as a preemption would send them) and its
        GPUs leave the cluster, so policies see a node of 0 GPUs from now on. Returns the jobs sent back."""
        hit = [js for js in self.running.values() if any(node == index for node, _ in js.placement)]
        for js in hit:
            self._vacate(js)
            self._rollback(js)
            del self.running[js.job.job_id]
            self.pending[js.job.job_id] = js
        node = self.nodes[index]
        self.free[index] = 0
        self.free_by_model[node.gpu_model] -= node.num_gpus
        self.gpus_by_model[node.gpu_model] -= node.num_gpus
        self.nodes[index] = dataclasses.replace(node, num_gpus=0)
        return [js.job.job_id for js in hit]

    def start_clock(self, now: float, energy_j: float = 0.0, cost: float = 0.0) -> None:
        """Begin at simulated time ``now`` with the energy and cost already spent (a restarted service)."""
        self.now = self._last_t = float(now)
        self.energy_j, self.cost = float(energy_j), float(cost)

    def advance(self, now: float) -> None:
        self._advance(max(now, self.now))

    def record(self) -> None:
        self._record_timeseries()
