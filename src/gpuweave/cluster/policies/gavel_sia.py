"""Gavel as Sia's simulator runs it (siasosp23/artifacts@aaf7a0d, ``sia-simulator/gavel.py``): the baseline of
Sia's evaluation (Jayaram Subramanya et al., SOSP'23, sec. 6.1), on Sia's job model.

Problem: every round of ``round_length`` (Sia runs it at 360 s) give each active job all of its GPUs (its trace's
count, rigid, batch fixed) on one GPU type, or none, so that over time jobs receive the time fractions ``x`` of
Gavel's ``max_sum_throughput_perf`` allocation (:func:`gpuweave.baselines.gavel.max_sum_throughput_lp`) computed
on the throughputs Sia's Gavel predicts (:meth:`gpuweave.workload.sia.SiaJobModel.gavel_throughput`).

Where it departs from Gavel's own simulator (:mod:`gpuweave.cluster.policies.gavel`), each as Sia's code does:

- the LP is solved anew every round, over the active jobs (no reset interval, no deficits);
- a job's time on each type starts at half a round when it is first seen, and every type's total time counts it
  (and never forgets a finished job's); ``priority = x * type time / job time`` (0 where x is 0);
- one queue over all types, sorted by (priority, x) descending, ties in type order then the jobs' order in the
  workload; taken greedily: a job once, when its type has at least its GPUs left (priority 0 included);
- placement per type, largest GPU count first: a job that stays on its type keeps its GPUs unless one of them went
  to a larger job; the others take the first free GPUs walking the type's nodes in order (one pointer per type
  and round), so a job may span nodes where a consolidated placement was possible.

The policy keeps Sia's GPU-level assignment (which GPUs of a node a job holds) to know which jobs can keep theirs;
a running job whose placement in the book no longer matches it (a lost node) is re-placed.

Complexity per round, M active jobs and R types: the LP (M R columns, M + R rows), an O(M R log(M R)) sort, the
placement O(M + GPUs).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from gpuweave.baselines.gavel import max_sum_throughput_lp
from gpuweave.cluster.contract import ClusterPolicy
from gpuweave.cluster.decision import Decision
from gpuweave.cluster.policies import register_policy
from gpuweave.errors import InputError
from gpuweave.workload.sia import SiaJobModel
from gpuweave.workload.traces.pollux import submit_order

if TYPE_CHECKING:
    from collections.abc import Iterable

    from gpuweave.cluster.state import ClusterView, JobState, Placement


@register_policy("gavel-sia")
class SiaGavelPolicy(ClusterPolicy):
    """Gavel's max-sum-throughput allocation with Sia's round mechanism, on Sia's job model (module docstring)."""

    default_round_length = 360.0
    needs = "sia"  # Sia's job model (its throughput prediction): not a policy for any trace

    def __init__(self, *, round_length: float | None = None, seed: int = 0) -> None:
        super().__init__(round_length=round_length, seed=seed)
        self._job_time: dict[str, np.ndarray] = {}  # per job, time received on each type (s)
        self._type_time: np.ndarray | None = None
        self._gpus: dict[str, tuple[str, tuple[int, ...]]] = {}  # job -> (type, global GPU ids), Sia's workers
        self._throughput: dict[tuple[str, int, str], float] = {}

    def schedule(self, view: ClusterView) -> Decision:
        model = view.profiles
        if not isinstance(model, SiaJobModel):
            raise InputError("gavel-sia needs Sia's job model as profiles (a Sia traces directory)", field="profiles")
        types = view.models
        jobs = sorted(
            [*view.running.values(), *view.pending.values()], key=lambda js: (submit_order(js.job), js.job.arrival)
        )
        if not jobs:
            return Decision()
        prior = (self.round_length or 0.0) / 2
        if self._type_time is None:
            self._type_time = np.zeros(len(types))
        for js in jobs:
            if js.job.job_id not in self._job_time:
                self._job_time[js.job.job_id] = np.full(len(types), prior)
                self._type_time += prior
        chosen = self._choose(view, model, jobs, types)
        wanted = self._place(view, chosen, types)
        round_length = self.round_length or 0.0
        for job_id, (r, _) in chosen.items():
            self._job_time[job_id][r] += round_length
            self._type_time[r] += round_length
        for js in jobs:
            if js.job.job_id not in chosen:
                self._gpus.pop(js.job.job_id, None)
        return Decision.from_allocation(view, wanted)

    def _rates(self, view: ClusterView, model: SiaJobModel, jobs: list[JobState], types: list[str]) -> np.ndarray:
        capacity = {m: sum(view.nodes[n].num_gpus for n in view.nodes_by_model[m]) for m in types}
        T = np.empty((len(jobs), len(types)))
        for i, js in enumerate(jobs):
            for r, gpu_model in enumerate(types):
                key = (js.job.job_type, js.job.num_gpus, gpu_model)
                rate = self._throughput.get(key)
                if rate is None:
                    rate = self._throughput[key] = model.gavel_throughput(*key, capacity[gpu_model])
                T[i, r] = rate
        return T

    def _choose(
        self, view: ClusterView, model: SiaJobModel, jobs: list[JobState], types: list[str]
    ) -> dict[str, tuple[int, int]]:
        """job -> (type index, GPUs) of the jobs this round runs: the LP, the priorities, the greedy pass."""
        assert self._type_time is not None
        M, R = len(jobs), len(types)
        scale = np.array([js.job.num_gpus for js in jobs], dtype=float)
        workers = np.array([sum(view.nodes[n].num_gpus for n in view.nodes_by_model[m]) for m in types], dtype=float)
        x = max_sum_throughput_lp(self._rates(view, model, jobs, types), scale, workers)
        job_time = np.stack([self._job_time[js.job.job_id] for js in jobs])
        priority = np.where(x == 0.0, 0.0, x / (job_time / self._type_time[None, :]))
        # Sia's queue: entries type-major (types in order, jobs in workload order), stable-sorted by (priority, x)
        prio_t, x_t = priority.T.ravel(), x.T.ravel()
        order = np.lexsort((np.arange(M * R), -x_t, -prio_t))
        left = workers.astype(int)
        chosen: dict[str, tuple[int, int]] = {}
        for entry in order.tolist():
            r, m = divmod(entry, M)
            job_id, need = jobs[m].job.job_id, jobs[m].job.num_gpus
            if left[r] == 0 or job_id in chosen or need > left[r]:
                continue
            left[r] -= need
            chosen[job_id] = (r, need)
        return chosen

    def _place(self, view: ClusterView, chosen: dict[str, tuple[int, int]], types: list[str]) -> dict[str, Placement]:
        """Sia's ``schedule_jobs_on_workers``: per type, by GPU count descending, keep or take first free GPUs."""
        node_of: list[int] = []  # global GPU id -> node, GPUs numbered node by node in node order
        for node in view.nodes:
            node_of.extend([node.index] * node.num_gpus)
        first_gpu = np.cumsum([0] + [node.num_gpus for node in view.nodes]).tolist()
        self._forget_moved(view, node_of)
        wanted: dict[str, Placement] = {}
        for r, gpu_model in enumerate(types):
            # the type's jobs in the order the greedy pass chose them, stable-sorted by GPU count descending
            queue = sorted([(need, job_id) for job_id, (t, need) in chosen.items() if t == r], key=lambda e: -e[0])
            servers = [
                list(range(first_gpu[n], first_gpu[n] + view.nodes[n].num_gpus)) for n in view.nodes_by_model[gpu_model]
            ]
            taken: set[int] = set()
            pointer = 0
            for size in sorted({need for need, _ in queue}, reverse=True):
                group = [job_id for need, job_id in queue if need == size]
                for job_id in group:
                    kept = self._gpus.get(job_id)
                    if kept is not None and kept[0] == gpu_model and not taken.intersection(kept[1]):
                        taken.update(kept[1])
                        wanted[job_id] = _placement(kept[1], node_of)
                for job_id in group:
                    if job_id in wanted:
                        continue
                    gpus: list[int] = []
                    while len(gpus) < size and pointer < len(servers):
                        if not servers[pointer]:
                            pointer += 1
                            continue
                        gpu = servers[pointer].pop(0)
                        if gpu not in taken:
                            gpus.append(gpu)
                            taken.add(gpu)
                    if len(gpus) != size:
                        raise RuntimeError(f"gavel-sia: could not place job {job_id} on {gpu_model}")
                    self._gpus[job_id] = (gpu_model, tuple(gpus))
                    wanted[job_id] = _placement(gpus, node_of)
        return wanted

    def _forget_moved(self, view: ClusterView, node_of: list[int]) -> None:
        """Drop the remembered GPUs of a job whose placement in the book differs from them (or that stopped)."""
        for job_id, (_, gpus) in list(self._gpus.items()):
            js = view.running.get(job_id)
            if js is None or js.placement != _placement(gpus, node_of):
                del self._gpus[job_id]


def _placement(gpus: Iterable[int], node_of: list[int]) -> Placement:
    """(node, GPUs) pairs, by node, of global GPU ids."""
    counts: dict[int, int] = {}
    for gpu in gpus:
        node = node_of[gpu]
        counts[node] = counts.get(node, 0) + 1
    return tuple(sorted(counts.items()))
