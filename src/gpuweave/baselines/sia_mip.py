"""Sia's allocation program and its placement, on plain arrays (Jayaram Subramanya et al., SOSP'23, sec. 4;
siasosp23/artifacts@aaf7a0d, ``sia-simulator/sia.py``: ``__solve_mip_rescaled`` and ``alloc_to_placement_fast``).

Problem: each round, give each job at most one *configuration* (a GPU type, a node count and a GPU count from
the type's list, :func:`configurations`) so as to minimise, for Sia's fairness power ``p < 0``,

    sum_j sum_k X[j,k] A[j,k]  +  lambda_n (jobs - sum_{j,k} X[j,k])
    s.t.  sum_k X[j,k] <= 1 (each job);  sum_j sum_{k on type t} gpus_k X[j,k] <= GPUs of t (each type);
          X[j, k_prev] = 1 for a job still in its checkpoint-restore;  X binary,

where ``A = round(G^p, 2)`` (capped at 3,000) and ``G[j,k]`` is the job's goodput on configuration k normalised to
its smallest non-zero goodput, every configuration but its current one multiplied by its re-allocation factor
(:func:`realloc_factor`). Sia hands the program to CBC through cvxpy with a 0.01 % relative gap
(``allowablePercentageGap = 1e-4 x 100``); this is our formulation for HiGHS with the same relative gap (1e-4):
J x K binary columns, J + T rows (plus one per pinned job). Placement per type (:func:`fast_placement`): jobs by
GPU count descending, each taking whole free nodes first, then any free GPUs, walking the nodes round-robin from
where the previous job stopped.

Complexity: the MILP (HiGHS branch and bound; the LP relaxation is nearly integral: one GPU knapsack row per
type); placement O(jobs x nodes).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from gpuweave.highs_models import highs_model, run_model

CONFIGS_4GPU = ((1, 1), (1, 2), (1, 4), *((n, 4 * n) for n in range(2, 17)))  # (nodes, GPUs), sia.py's CONFIGS_4GPU
CONFIGS_8GPU = ((1, 1), (1, 2), (1, 4), (1, 8), *((n, 8 * n) for n in range(2, 9)))
ZERO_ALLOC_GAIN = 1e-4  # the goodput of a configuration a job may not take (sia.py's ZERO_ALLOC_GAIN)
CLIP = 3000.0  # the largest A (simulator_config.py's sia_goodput_clip_val)
MIP_GAP = 1e-4  # relative: CBC's allowablePercentageGap of 0.01 (%)


def configurations(gpus_per_node: int, nodes: int) -> list[tuple[int, int]]:
    """(nodes, GPUs) a job may take on a type of ``nodes`` nodes of ``gpus_per_node`` GPUs (Sia's lists for 4-GPU
    nodes and for any other size, cut at the type's node count)."""
    table = CONFIGS_4GPU if gpus_per_node == 4 else CONFIGS_8GPU
    return [(n, g) for n, g in table if n <= nodes]


def realloc_factor(age: float, restarts: int, penalty: float) -> float:
    """Pollux's re-allocation factor as Sia uses it: ``max(age - restarts x penalty, 0) / (age + penalty)``, 1 for a
    job younger than its penalty."""
    if age < penalty:
        return 1.0
    return max(age - restarts * penalty, 0.0) / (age + penalty)


def power_matrix(goodputs: np.ndarray, p: float) -> np.ndarray:
    """``A = round(G^p, 2)`` capped at :data:`CLIP`, in single precision as Sia computes it."""
    powered = np.round(np.power(goodputs.astype(np.float32), np.float32(p)), decimals=2)
    powered[powered > CLIP] = CLIP
    return powered


def solve_allocation(
    A: np.ndarray,
    config_gpus: Sequence[int],
    config_type: Sequence[int],
    capacity: Sequence[int],
    pinned: dict[int, int],
    lambda_n: float,
    time_limit: float = 60.0,
) -> list[int | None]:
    """Each job's configuration (column of ``A``) or None, minimising the module docstring's objective. ``pinned``:
    job row -> the configuration it must keep. J x K columns (K configurations), J + T (+ pinned) rows."""
    J, K = A.shape
    if J == 0:
        return []
    gpus = np.asarray(config_gpus, dtype=float)
    types = np.asarray(config_type, dtype=int)
    T = len(capacity)
    # columns configuration-major (column k J + j is X[j, k]): the order cvxpy hands Sia's variable to its solver
    columns = np.arange(J * K)
    conf_of, job_of = np.divmod(columns, J)
    pins = sorted(pinned.items())
    ri = np.concatenate([job_of, J + types[conf_of], J + T + np.arange(len(pins))])
    rc = np.concatenate([columns, columns, np.array([k * J + j for j, k in pins], dtype=int)])
    rv = np.concatenate([np.ones(J * K), gpus[conf_of], np.ones(len(pins))])
    lower = np.concatenate([np.full(J + T, -np.inf), np.ones(len(pins))])
    upper = np.concatenate([np.ones(J), np.asarray(capacity, dtype=float), np.ones(len(pins))])
    cost = A.astype(float).T.ravel() - lambda_n
    h = highs_model(
        cost,
        ri,
        rc,
        rv,
        lower,
        upper,
        col_upper=np.ones(J * K),
        integral=np.ones(J * K, dtype=bool),
        offset=lambda_n * J,
        options={"mip_rel_gap": MIP_GAP, "threads": 1, "time_limit": float(time_limit)},
    )
    solved = run_model(h)
    if solved is None:
        raise RuntimeError("Sia's allocation program is infeasible (a pinned job no longer fits)")
    x = np.round(solved[1]).reshape(K, J).T
    return [int(np.argmax(row)) if row.sum() > 0 else None for row in x]


def fast_placement(allocs: list[tuple[str, int]], node_gpus: Sequence[int]) -> dict[str, list[int]]:
    """Sia's ``alloc_to_placement_fast`` on one type: ``allocs`` (job, GPUs) in the program's order; returns each
    job's node (index into ``node_gpus``) per GPU, in the order taken."""
    free = list(node_gpus)
    count = len(free)
    per_node = max(free)
    pointer = 0
    out: dict[str, list[int]] = {}
    for job, gpus in sorted(allocs, key=lambda a: -a[1]):
        node, taken = pointer, []
        whole = gpus // per_node
        checked = 0
        while whole > 0 and checked < count:
            if free[node] == per_node:
                free[node] = 0
                gpus -= per_node
                taken.extend([node] * per_node)
                whole -= 1
            node = (node + 1) % count
            checked += 1
        if gpus > sum(free):
            raise RuntimeError(f"Sia's placement: job {job} does not fit")
        while gpus > 0:
            if free[node]:
                take = min(gpus, free[node])
                gpus -= take
                free[node] -= take
                taken.extend([node] * take)
            node = (node + 1) % count
        out[job] = taken
        pointer = node
    return out
