"""Optimus, as Pollux's simulator runs it: GPUs to elastic jobs by the largest marginal drop in remaining time.

Problem (Peng et al., EuroSys'18, sec. 4; as Pollux's baseline "Optimus+Oracle+TunedJobs", Qiao et al., OSDI'21
sec. 5.1, artifact petuum/adaptdl branch ``osdi21-artifact``, ``simulator/optimus.py``): every 60 s, share the
cluster's GPUs among the active jobs, each keeping its trace's batch size but any GPU count from 1 to its most
(its batch over the smallest measured per-GPU batch; Pollux's simulator gives ncf jobs 1). With an oracle of the
job model instead of Optimus' fitted models:

1. Each active job, in arrival order (same-second submissions in the workload's row order), gets one GPU while
   there are GPUs (the rest get none this round).
2. A job's *gain* from one more GPU is the drop in its predicted step time, ``step(n) - step(n + 1)``, times its
   remaining steps: the validation run's steps from the job's finished epochs to its last epoch (1 once there).
   Step time is predicted on GPUs packed on full nodes, a single GPU always accumulating gradients once.
3. While GPUs are left and some gain is positive, the job of largest gain (the earliest on ties) takes one more
   GPU and its gain is recomputed (0 once it reaches its most).
4. Placement: a running job whose count did not change keeps its GPUs; the others, fewest GPUs first (arrival order
   on ties), take GPUs greedily from the node with the most free (lowest index on ties), as Tiresias there.

A job whose count changes restarts (Pollux's 30 s re-scale delay: run it with ``restart_delay: 30`` and
``start_delay: 30``). Jobs must be elastic (``moldable``: their most GPUs, as ``crosscheck pollux`` imports them)
and the profile source Pollux's job model (:mod:`gpuweave.workload.pollux`), which answers the oracle's questions;
the epochs finished come from the simulator's epoch clock (:mod:`gpuweave.cluster.epoch_rounding`).

Complexity per round: O(A log A + G log A) for A active jobs and G GPUs (a heap of gains; each GPU handed out
recomputes one gain, each an O(1) cached step-time look-up), plus O(G x nodes) placement.
"""

from __future__ import annotations

import heapq
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from gpuweave.cluster.contract import ClusterPolicy
from gpuweave.cluster.decision import Decision
from gpuweave.cluster.policies import register_policy
from gpuweave.errors import InputError
from gpuweave.workload.traces.pollux import submit_order

if TYPE_CHECKING:
    from gpuweave.cluster.state import ClusterView, JobState, Placement


@runtime_checkable
class OptimusOracle(Protocol):
    """What Optimus asks the job model (Pollux's job model answers)."""

    def optimus_remaining(self, job_type: str, epoch: int) -> float: ...

    def optimus_step_time(self, job_type: str, replicas: int) -> float | None: ...

    def max_replicas(self, job_type: str) -> int: ...


def _submission(js: JobState) -> tuple[float, float, str]:
    """Arrival order, same-second submissions in the workload's row order as Pollux's simulator takes them."""
    return (js.job.arrival, submit_order(js.job), js.job.job_id)


def _most_gpus(js: JobState, oracle: OptimusOracle) -> int:
    """The job model's most GPUs for the job, within its trace's ``moldable`` (True or a number: 1..N GPUs)."""
    job = js.job
    allowed = job.attrs.get("moldable") if job.attrs else None
    if allowed is True or (isinstance(allowed, (int, float)) and allowed >= 1):
        most = oracle.max_replicas(job.job_type)
        return most if allowed is True else min(most, int(allowed))
    raise InputError(
        f"optimus resizes jobs, and job '{job.job_id}' is not elastic: give the trace a 'moldable' column (its most "
        "GPUs; crosscheck pollux writes it)",
        field="moldable",
    )


@register_policy("optimus")
class OptimusPolicy(ClusterPolicy):
    """Optimus (Pollux's oracle baseline): GPUs by largest marginal drop in remaining time, every 60 s."""

    default_round_length = 60.0
    needs = "pollux"  # Pollux's job model (its oracle) and elastic jobs: not a policy for any trace

    def __init__(self, *, round_length: float | None = None, seed: int = 0) -> None:
        super().__init__(round_length=round_length, seed=seed)
        self._step_times: dict[tuple[str, int], float | None] = {}

    def _step(self, oracle: OptimusOracle, job_type: str, replicas: int) -> float | None:
        key = (job_type, replicas)
        if key not in self._step_times:
            self._step_times[key] = oracle.optimus_step_time(job_type, replicas)
        return self._step_times[key]

    def _gain(self, oracle: OptimusOracle, job_type: str, replicas: int, remaining: float) -> float:
        now, more = self._step(oracle, job_type, replicas), self._step(oracle, job_type, replicas + 1)
        if now is None or more is None:
            return 0.0  # the tables cannot say: no reason to grow it
        return (now - more) * remaining

    def schedule(self, view: ClusterView) -> Decision:
        oracle = view.profiles
        if not isinstance(oracle, OptimusOracle):
            raise InputError(
                "optimus needs Pollux's job model as profiles (a Pollux traces directory)", field="profiles"
            )
        active = sorted([*view.pending.values(), *view.running.values()], key=_submission)
        replicas = self._counts(view, oracle, active)
        return Decision.from_allocation(view, self._place(view, active, replicas))

    def _counts(self, view: ClusterView, oracle: OptimusOracle, active: list[JobState]) -> dict[str, int]:
        """Steps 1-3 of the module docstring: every active job's GPU count this round."""
        free = sum(node.num_gpus for node in view.nodes)
        replicas: dict[str, int] = {}
        heap: list[tuple[float, int, str]] = []  # (-gain, arrival rank, job): the largest gain, earliest on ties
        facts: dict[str, tuple[str, float, int]] = {}
        for rank, js in enumerate(active):
            job_id, job_type = js.job.job_id, js.job.job_type
            if free < 1:
                replicas[job_id] = 0
                continue
            epoch = view.epochs_done(js)
            if epoch is None:
                raise InputError(
                    "optimus needs the epoch clock of Pollux's job model and a round length", field="profiles"
                )
            remaining, most = oracle.optimus_remaining(job_type, epoch), _most_gpus(js, oracle)
            facts[job_id] = (job_type, remaining, most)
            replicas[job_id] = 1
            free -= 1
            if 2 <= most and free >= 1:
                gain = self._gain(oracle, job_type, 1, remaining)
                if gain > 0:
                    heap.append((-gain, rank, job_id))
        heapq.heapify(heap)
        while free > 0 and heap:
            _, rank, job_id = heapq.heappop(heap)
            job_type, remaining, most = facts[job_id]
            n = replicas[job_id] = replicas[job_id] + 1
            free -= 1
            if n + 1 <= most:
                gain = self._gain(oracle, job_type, n, remaining)
                if gain > 0:
                    heapq.heappush(heap, (-gain, rank, job_id))
        return replicas

    def _place(self, view: ClusterView, active: list[JobState], replicas: dict[str, int]) -> dict[str, Placement]:
        """Step 4: kept placements for unchanged counts, greedy most-free for the rest."""
        wanted: dict[str, Placement] = {}
        free = [node.num_gpus for node in view.nodes]
        for js in active:
            placement = js.placement
            if placement is not None and sum(k for _, k in placement) == replicas[js.job.job_id]:
                wanted[js.job.job_id] = placement
                for node, k in placement:
                    free[node] -= k
        for js in sorted(active, key=lambda js: replicas[js.job.job_id]):  # stable: arrival order on ties
            job_id = js.job.job_id
            need = replicas[job_id]
            if need == 0 or job_id in wanted:
                continue
            taken: list[tuple[int, int]] = []
            while need > 0:
                node = max(range(len(free)), key=free.__getitem__)  # the most free, lowest index on ties
                k = min(free[node], need)
                taken.append((node, k))
                free[node] -= k
                need -= k
            wanted[job_id] = tuple(taken)
        return wanted
