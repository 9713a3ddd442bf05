"""Pollux: GPUs per node to adaptive jobs by a genetic search for the fairest goodput, every 60 s.

Problem (Qiao et al., OSDI'21 sec. 4; as its artifact's simulator runs it, petuum/adaptdl branch
``osdi21-artifact``, ``simulator/pollux.py`` and ``simulator.py``): every interval, give each active job some GPUs on
some nodes; each job then picks its own batch for them (:mod:`gpuweave.workload.pollux_agent`, on the run's
:mod:`gpuweave.cluster.adaptive_clock`). Per round:

1. Jobs in order of attained GPU-seconds, then arrival. A job's *speedup* on (nodes, GPUs) is its agent's best
   goodput there over its best goodput on Pollux's fair share (``ceil(GPUs / jobs)`` GPUs on
   ``ceil(nodes / GPUs)`` nodes); before its first measurement, GPUs over the fair share.
2. A job may take up to ``min(max(2 x most GPUs it ran on, 1), 64, largest batch / smallest per-GPU batch)`` GPUs
   (ncf 1); a restarted job's term is charged ``max(age - 30 restarts, 0) / (age + 30)``.
3. The search (:mod:`gpuweave.baselines.pollux_search`, NSGA-II, population 100, 100 generations) starts from the
   last round's Pareto front, carried to today's jobs as Pollux carries it: the k-th job present in both rounds,
   in last round's order, passes its rows to the k-th such job in today's order (the orders may differ); the
   first round starts from today's allocation. The chosen solution is the front's best power mean.
4. A job whose GPUs per node changed restarts (Pollux's 30 s re-scale delay: run it with ``restart_delay: 30``
   and ``start_delay: 30``); one given nothing waits.

The search is random: ``seed`` fixes it (Pollux's simulator draws from numpy's global generator, unseeded). Jobs
are elastic (``moldable``: their most GPUs, as ``crosscheck pollux`` imports them); ncf jobs keep Pollux's
simulator's fixed batch of 32768.

Complexity per round: O(jobs x 16 x 64 x 50) for the speedup tables, then the search's O(generations x
population x jobs x nodes).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from gpuweave.baselines.pollux_search import MAX_NODES, RESTART_DELAY, AllocationProblem, search
from gpuweave.cluster.contract import ClusterPolicy
from gpuweave.cluster.decision import Decision
from gpuweave.cluster.policies import register_policy
from gpuweave.errors import InputError

if TYPE_CHECKING:
    from gpuweave.cluster.state import ClusterView, JobState, Placement
    from gpuweave.workload.pollux_agent import AgentState

MAX_REPLICAS = 64  # Pollux's simulator's cap on one job's GPUs


@register_policy("pollux")
class PolluxPolicy(ClusterPolicy):
    """Pollux (OSDI'21): adaptive jobs, GPUs by a genetic search of the fairest goodput, every 60 s."""

    default_round_length = 60.0
    needs = "pollux"  # Pollux's job model and elastic jobs
    decides_on_agents = True  # live: the adaptive jobs' measured agents (gpuweave.live.agents)
    fixed_batches = (("ncf", 32768),)  # Pollux's simulator fixes ncf's batch; the simulator reads this

    def __init__(
        self, *, round_length: float | None = None, seed: int = 0, population: int = 100, generations: int = 100
    ) -> None:
        super().__init__(round_length=round_length, seed=seed)
        for option, value, least in (("population", population, 2), ("generations", generations, 1)):
            if isinstance(value, bool) or not isinstance(value, int) or not least <= value <= 100_000:
                raise ValueError(f"{option} must be an integer from {least} to 100000, got {value!r}")
        self._rng = np.random.default_rng(seed)
        self.population = population
        self.generations = generations
        self._last: tuple[np.ndarray, list[str]] | None = None  # last round's front and its job order

    def schedule(self, view: ClusterView) -> Decision:
        active = [*view.pending.values(), *view.running.values()]
        if not active:
            return Decision()
        agents = [view.job_agent(js) for js in active]
        if any(agent is None for agent in agents):
            raise InputError("pollux needs Pollux's job model as profiles and a round length", field="profiles")
        order = sorted(range(len(active)), key=lambda i: (view.attained_service(active[i]), active[i].job.arrival))
        jobs = [active[i] for i in order]
        problem = self._problem(view, jobs, [agents[i] for i in order])  # type: ignore[misc]
        states, values = search(
            problem, self._initial(problem, jobs), self._rng, pop_size=self.population, generations=self.generations
        )
        self._last = (states, [js.job.job_id for js in jobs])
        best = states[int(np.argmin(values[:, 0]))]
        wanted: dict[str, Placement] = {}
        for js, row in zip(jobs, best):
            placement = tuple((int(node), int(k)) for node, k in enumerate(row) if k > 0)
            if placement:
                wanted[js.job.job_id] = placement
        return Decision.from_allocation(view, wanted)

    def _problem(self, view: ClusterView, jobs: list[JobState], agents: list[AgentState]) -> AllocationProblem:
        node_gpus = np.array([node.num_gpus for node in view.nodes], dtype=np.int64)
        total = int(node_gpus.sum())
        fair_replicas = math.ceil(total / len(jobs))
        fair_nodes = math.ceil(len(node_gpus) / total)
        most = np.array([_max_replicas(agent) for agent in agents], dtype=np.int64)
        speedups = np.zeros((len(jobs), MAX_NODES + 1, int(most.max()) + 1))
        for j, agent in enumerate(agents):
            model = agent.goodput_model()
            width = int(most[j])
            if model is None:
                r = np.arange(width + 1, dtype=float)
                n = np.arange(MAX_NODES + 1)[:, None]
                speedups[j, :, : width + 1] = np.where((n >= 1) & (n <= r), r / fair_replicas, 0.0)
            else:
                speedups[j, :, : width + 1] = model.speedups(MAX_NODES, width, base=(fair_nodes, fair_replicas))
        base = np.zeros((len(jobs), len(node_gpus)), dtype=np.int64)
        for j, js in enumerate(jobs):
            for node, k in js.placement or ():
                base[j, node] += k
        now = view.now
        age = np.array([now - js.job.arrival for js in jobs])
        restarts = np.array([agent.restarts or 0 for agent in agents], dtype=float)
        factor = np.maximum(age - restarts * RESTART_DELAY, 0.0) / (age + RESTART_DELAY)
        return AllocationProblem(speedups, base, most, factor, node_gpus, np.full(len(jobs), 1.0 / total))

    def _initial(self, problem: AllocationProblem, jobs: list[JobState]) -> np.ndarray:
        """Step 3 of the module docstring: the last front carried to today's jobs, or today's allocation."""
        if self._last is None:
            return problem.base[None]
        states, previous = self._last
        today = [js.job.job_id for js in jobs]
        present = set(today)
        kept = set(previous)
        src = [i for i, job in enumerate(previous) if job in present]
        dst = [i for i, job in enumerate(today) if job in kept]
        out = np.zeros((len(states), *problem.shape), dtype=np.int64)
        out[:, dst, :] = states[:, src, :]
        return out


def _max_replicas(agent: AgentState) -> int:
    """Step 2 of the module docstring."""
    app = agent.app  # the job model's most for its largest batch: each GPU its smallest batch, ncf's cap
    return min(max(2 * agent.max_profiled_replicas, 1), MAX_REPLICAS, app.max_replicas(app.max_batch_size))
