"""The cluster policy contract: what the simulator and the live runtime may ask of a policy, and nothing more.

A policy decides, from a read-only :class:`~gpuweave.cluster.state.ClusterView`, which jobs run where; it returns a
:class:`~gpuweave.cluster.decision.Decision` (start/move/stop as a diff) that its driver validates and carries out.
The same object is driven by the simulator (:mod:`gpuweave.cluster.simulator`) and by the live runtime: a policy
must not know, or ask, which one drives it.

Everything a driver needs is fixed at construction and never changes afterwards:

- ``name``: the registry name (set by :func:`gpuweave.cluster.policies.register_policy`).
- ``round_length``: seconds between scheduling rounds, or None for an event-driven policy. A round-based policy is
  called on the grid ``k * round_length`` while jobs are active.
- ``reacts_to_events``: a round-based policy that is also called after every instant at which a job arrived or
  completed (event-driven policies always are).
- ``forks_jobs``: the policy may give a job several whole copies of its GPUs (HadarE); the driver then runs the
  copies and adds up their progress.
- ``seed``: the seed of every random choice the policy makes.

A policy that times its own decisions appends ``(time, queued jobs, seconds)`` to ``decision_times`` (empty for
the others), so drivers and reproductions read it without asking what the policy is.

Policies are built by :func:`gpuweave.cluster.policies.make_policy` (``round_length`` and ``seed`` from the run
config, options from ``policy_options``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar

from gpuweave.checks import ROUND_LENGTH, number
from gpuweave.cluster.decision import Decision
from gpuweave.cluster.state import ClusterView


class ClusterPolicy(ABC):
    """Base of every cluster policy. Subclasses set ``default_round_length`` (None = event-driven) and, where it
    applies, ``default_reacts_to_events`` / ``forks_jobs``; their ``__init__`` takes its own options plus
    ``round_length`` and ``seed`` and passes those two to ``super().__init__``."""

    name: ClassVar[str] = ""
    default_round_length: ClassVar[float | None] = None
    default_reacts_to_events: ClassVar[bool] = False
    forks_jobs: ClassVar[bool] = False
    # can place every job through ClusterView.placement (and never moves a running one): a task placement can drive
    # it (shared GPUs; a preempted task gives its share back, gpuweave.cluster.sharing.ledger)
    places_tasks: ClassVar[bool] = False
    # shares GPU time only: a shared run's CPU-only tasks (0 GPUs) are outside what it allocates (Gavel's LPs), so
    # a run that has them is refused before it starts
    gpu_tasks_only: ClassVar[bool] = False
    # what the run must give it beyond any trace and profile store (None: nothing; "pollux": Pollux's job model and
    # elastic jobs, as Optimus in Pollux's simulator): such a policy is left out of policy_names()
    needs: ClassVar[str | None] = None
    # decides on nothing but the jobs' agents (ClusterView.job_agent): live, adaptive jobs' measured agents can give
    # what it needs (gpuweave.live.agents), so the live runtime runs it when every job is adaptive
    decides_on_agents: ClassVar[bool] = False
    # reads each job's throughput fit per GPU type (AgentState.perf_on): live, an agent then keeps one fit per type
    # and switches with the job's placement (Sia); otherwise one fit whatever the type (Pollux, unaware of types)
    fits_per_gpu_type: ClassVar[bool] = False

    def __init__(
        self, *, round_length: float | None = None, seed: int = 0, reacts_to_events: bool | None = None
    ) -> None:
        length = self.default_round_length if round_length is None else float(round_length)
        if length is not None:
            length = number(length, ROUND_LENGTH, field="round_length")
        self._round_length = length
        self._seed = int(seed)
        self._reacts = self.default_reacts_to_events if reacts_to_events is None else bool(reacts_to_events)
        self.decision_times: list[tuple[float, int, float]] = []

    @property
    def round_length(self) -> float | None:
        return self._round_length

    @property
    def seed(self) -> int:
        return self._seed

    @property
    def reacts_to_events(self) -> bool:
        """Called after arrivals/completions: always for event-driven policies, opt-in for round-based ones."""
        return self._round_length is None or self._reacts

    @abstractmethod
    def schedule(self, view: ClusterView) -> Decision:
        """Return the decision for the cluster as ``view`` shows it now. Must not mutate ``view``."""
