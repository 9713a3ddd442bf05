"""The live runtime's side of the cluster's book: decisions become executor actions, worker reports become progress.

Problem: a policy must not know whether it is simulated. The live runtime keeps the cluster's state in the same
:class:`~gpuweave.cluster.book.ClusterBook` the simulator uses (same gang, capacity and feasibility rules, same
restart and energy accounting) and shows policies the same :class:`~gpuweave.cluster.state.ClusterView`; what
differs is the clock (the wall clock, scaled, moved by the runtime) and progress, which comes from the workers'
reports instead of predicted finish times. :class:`LiveBook` holds that book and turns the change a decision made
to the running set into :class:`Action` s for the executor. Complexity: O(running jobs) per decision (the set of
placements before and after is compared).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gpuweave.cluster.book import ClusterBook
from gpuweave.cluster.contract import ClusterPolicy
from gpuweave.cluster.decision import Decision
from gpuweave.cluster.placements import PlacementRule, TaskPlacement
from gpuweave.cluster.simulator import SimulationRecords, book_records
from gpuweave.cluster.state import ClusterView, CountedDict, JobAgents, JobState, Placement
from gpuweave.hardware.cluster_spec import Node
from gpuweave.workload.job import Job
from gpuweave.workload.profile_source import ProfileSource


@dataclass(frozen=True, slots=True)
class Action:
    kind: str  # "start" (was waiting), "move" (was running elsewhere) or "stop"
    job_id: str
    placement: Placement | None


class LiveBook:
    """The cluster's book of a live run and the runtime's counters (see module docstring)."""

    def __init__(
        self,
        nodes: list[Node],
        jobs: list[Job],
        policy: ClusterPolicy,
        profiles: ProfileSource,
        gpu_power: dict[str, tuple[float, float]],
        *,
        restart_delay: float = 10.0,
        record_segments: bool = True,
        placement: PlacementRule | TaskPlacement | None = None,
    ) -> None:
        shares = None
        if isinstance(placement, TaskPlacement):  # tasks sharing GPUs (gpuweave.cluster.sharing.ledger)
            from gpuweave.cluster.sharing.ledger import shared_run

            shares, placement = shared_run(nodes, jobs, policy, placement)
        self.cluster = ClusterBook(
            nodes,
            jobs,
            profiles,
            gpu_power,
            restart_delay=restart_delay,
            record_segments=record_segments,
            forks_jobs=policy.forks_jobs,
            shares=shares,
        )
        self.cluster.check_feasible()
        self.policy = policy
        self.view = ClusterView(self.cluster, policy.round_length, placement)
        self.events = 0  # arrivals admitted (a simulation's events; the runtime counts them)
        self.decisions = 0  # policy calls (the runtime counts them)

    # The book's live containers and clock, read by the runtime on every poll.
    @property
    def now(self) -> float:
        return self.cluster.now

    @property
    def states(self) -> list[JobState]:
        return self.cluster.states

    @property
    def pending(self) -> CountedDict[str, JobState]:
        return self.cluster.pending

    @property
    def running(self) -> CountedDict[str, JobState]:
        return self.cluster.running

    def add(self, job: Job) -> JobState:
        """A job handed over while the run goes on (the service); InputError on a duplicate id."""
        return self.cluster.add(job)

    def arrive(self, js: JobState) -> None:
        self.cluster.arrive(js)

    def use_policy(self, policy: ClusterPolicy) -> None:
        """Decisions come from ``policy`` from now on (its round length and forking rule with it)."""
        self.policy = policy
        self.view.round_length = policy.round_length
        self.cluster.forks_jobs = policy.forks_jobs

    def use_agents(self, agents: JobAgents) -> None:
        """Adaptive jobs' agents for the policy (``ClusterView.job_agent``: :mod:`gpuweave.live.agents`)."""
        self.cluster.agents = agents

    def use_profiles(self, profiles: ProfileSource) -> None:
        self.cluster.use_profiles(profiles)

    def apply_decision(self, decision: Decision) -> list[Action]:
        cluster = self.cluster
        before = {job_id: js.placement for job_id, js in cluster.running.items()}
        cluster.apply(decision, self.policy.name or type(self.policy).__name__)
        actions = []
        for job_id in decision.preempt:
            if job_id not in cluster.running:
                actions.append(Action("stop", job_id, None))
        for job_id, js in cluster.running.items():
            old = before.get(job_id)
            if js.placement != old:
                actions.append(Action("start" if old is None else "move", job_id, js.placement))
                js.productive_start = math.inf  # no progress until the new workers report
        return actions

    @property
    def shared(self) -> bool:
        """A shared run: its tasks hold shares of GPUs (gpuweave.cluster.sharing.ledger)."""
        return self.cluster.shares is not None

    def discard_plan(self) -> list[Action]:
        """A decision that changed nothing: no action (a shared run's plan gives back what it took)."""
        self.cluster.discard_plan()
        return []

    def gpu_slots(self, job_id: str) -> tuple[tuple[int, ...], float] | None:
        """A shared run's running task: its GPU slots and the part of each it holds (None: whole GPUs)."""
        return self.cluster.gpu_slots(job_id)

    def move_share(self, job_id: str, gpus: tuple[int, ...]) -> bool:
        """A shared run's running task is on GPU slots the cluster chose: the ledger follows (ClusterBook's)."""
        return self.cluster.move_share(job_id, gpus)

    def observe(self, js: JobState, remaining: float, rate: float) -> None:
        """A worker report: ``remaining`` steps left as of now, at ``rate`` steps per (simulated) second."""
        js.remaining = remaining
        js.rate = rate
        js.productive_start = self.cluster.now

    def set_remaining(self, js: JobState, remaining: float) -> None:
        """After a stop: the job resumes from its checkpoint, whatever the extrapolation said."""
        js.remaining = remaining

    def complete(self, js: JobState) -> None:
        """The job's work is done (it may have been preempted in the instant its last checkpoint landed)."""
        self.cluster.complete(js)

    def fail(self, js: JobState) -> None:
        """Take a failed job out of the cluster (it keeps ``end = None``)."""
        self.cluster.fail(js)

    def lose_node(self, index: int) -> list[str]:
        """A node that disappeared: its jobs go back to the queue; see :meth:`ClusterBook.lose_node`."""
        return self.cluster.lose_node(index)

    def start_clock(self, now: float, energy_j: float = 0.0, cost: float = 0.0) -> None:
        """Begin at simulated time ``now`` with the energy and cost already spent (a restarted service)."""
        self.cluster.start_clock(now, energy_j, cost)

    def advance(self, now: float) -> None:
        """The wall clock says it is ``now`` (never backwards)."""
        self.cluster.advance(max(now, self.cluster.now))

    def record(self) -> None:
        self.cluster.record_timeseries()

    def records(self, start_time: float) -> SimulationRecords:
        """What the run produced from ``start_time`` to now."""
        return book_records(self.cluster, start_time, self.events, self.decisions)
