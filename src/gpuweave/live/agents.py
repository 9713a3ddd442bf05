"""Adaptive jobs in a live run: each job's Pollux agent, fed by what its workers measure.

Problem (Qiao et al., OSDI'21 sec. 3-4: the PolluxAgent beside each job): ``pollux`` decides on each job's goodput
model, its throughput fit and gradient noise. In a simulation the job model's tables give them
(:mod:`gpuweave.cluster.adaptive_clock`); live, the job's own workers do, as adaptdl's agent does: the bundled torch
worker reports its seconds per optimizer step and the part of it spent synchronising (``api.report_step_times``)
and its gradient statistics (``api.report_gradients``). This module keeps one
:class:`~gpuweave.workload.pollux_agent.AgentState` per adaptive job (the simulator's agent, the same code) on the
job's batch limits (:class:`~gpuweave.workload.pollux.BatchLimits`, from its trace's ``batch_size``,
``max_batch_size``, ``min_local_bsz`` and ``max_local_bsz``), records each configuration the job ran at and refits
its throughput model on a new one (:meth:`LiveAgents.measure`), and picks the batch of each new placement
(:meth:`LiveAgents.launch`: Pollux's ``reallocate``, one more restart), which the runtime hands to the workers
(``GPUWEAVE_BATCH_SIZE``, ``GPUWEAVE_ACCUM_STEPS``, ``GPUWEAVE_INIT_BATCH``). The policy reads them through
``ClusterView.job_agent``, as in a simulation. A policy that reads a fit per GPU type (``sia``,
``ClusterPolicy.fits_per_gpu_type``) gets one agent's fits per type: the agent switches type with the placement
(:meth:`AgentState.switch_type`), so each type's measurements refit that type's model only. Complexity: O(1) per
look-up; a fit per new configuration.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpuweave.errors import InputError
from gpuweave.workload.pollux import BatchLimits, BatchPlan
from gpuweave.workload.pollux_agent import AgentState

if TYPE_CHECKING:
    from gpuweave.cluster.state import JobState, Placement
    from gpuweave.workload.job import Job

#: the trace columns (``Job.attrs``) that make a job adaptive, all four or none
ADAPTIVE_COLUMNS = ("batch_size", "max_batch_size", "min_local_bsz", "max_local_bsz")


def batch_limits(job: Job) -> BatchLimits | None:
    """The job's batch limits from its trace's columns, None for a rigid job; a bad or partial set is an InputError
    naming the job and the field."""
    given = [c for c in ADAPTIVE_COLUMNS if job.attrs.get(c) not in (None, "")]
    if not given:
        return None
    values: dict[str, int] = {}
    for column in ADAPTIVE_COLUMNS:
        value = job.attrs.get(column)
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise InputError(
                f"job {job.job_id}: an adaptive job needs {', '.join(ADAPTIVE_COLUMNS)} as whole numbers >= 1, "
                f"got {value!r}",
                field=column,
            )
        values[column] = value
    init, most, least, local = (values[c] for c in ADAPTIVE_COLUMNS)
    if not (least <= local and init <= most and least <= init):
        raise InputError(
            f"job {job.job_id}: expected min_local_bsz <= max_local_bsz and min_local_bsz <= batch_size <= "
            f"max_batch_size, got {least}, {local}, {init}, {most}",
            field="batch_size",
        )
    moldable = job.attrs.get("moldable")
    cap = int(moldable) if isinstance(moldable, (int, float)) and not isinstance(moldable, bool) else None
    return BatchLimits(job.job_type, init, most, least, local, replica_cap=cap)


def gpus_per_node(placement: Placement) -> tuple[int, ...]:
    """A placement as GPUs per node in node order (zeros between), as the agent keys its measurements."""
    width = 1 + max(node for node, _ in placement)
    counts = [0] * width
    for node, k in placement:
        counts[node] += k
    return tuple(counts)


class LiveAgents:
    """The agents of a live run's adaptive jobs (module docstring); answers ``ClusterView.job_agent``."""

    def __init__(self) -> None:
        self._agents: dict[str, AgentState] = {}
        # one throughput fit per GPU type, switched with the placement (a policy that reads them: Sia), or one fit
        # whatever the type (Pollux); the runtime sets it from its policy
        self.per_gpu_type = False

    def add(self, job: Job) -> bool:
        """Track ``job`` if it is adaptive; whether it is."""
        limits = batch_limits(job)
        if limits is not None:
            self._agents.setdefault(job.job_id, AgentState(limits))
        return limits is not None

    def __contains__(self, job_id: object) -> bool:
        return job_id in self._agents

    def agent(self, js: JobState, t: float) -> AgentState | None:
        """The job's agent (do not mutate); None for a rigid job."""
        return self._agents.get(js.job.job_id)

    def launch(self, job_id: str, placement: Placement, gpu_type: str) -> BatchPlan:
        """A new placement on GPUs of ``gpu_type``: the agent picks its batch (Pollux's ``reallocate``: one more
        restart) for the workers; with fits per GPU type, the type's fit (none yet on a new type) comes in first."""
        agent = self._agents[job_id]
        if self.per_gpu_type:
            agent.switch_type(gpu_type, agent.app)
        counts = gpus_per_node(placement)
        agent.reallocate(counts)
        replicas = sum(counts)
        return BatchPlan(agent.atomic_bsz, agent.accum_steps, agent.batch_size(replicas))

    def measure(
        self,
        job_id: str,
        placement: Placement,
        step_time: float,
        sync_time: float,
        grad: tuple[float, float] | None,
    ) -> None:
        """The workers' measurement on ``placement`` at the batch :meth:`launch` picked: seconds per synchronising
        step and its synchronisation (simulated seconds), and the gradient statistics (squared norm, variance at
        the initial batch) if they have any. A new configuration refits the throughput model."""
        agent = self._agents[job_id]
        if not (step_time > 0 and 0 <= sync_time < step_time):
            return  # not a usable measurement yet (the first steps, or a clock that went backwards)
        if grad is not None:
            agent.grad = grad
        elif agent.grad is None:
            return  # no goodput model without gradient statistics yet: the next report brings both
        counts = [c for c in gpus_per_node(placement) if c]
        agent.record(len(counts), sum(counts), step_time, sync_time)
