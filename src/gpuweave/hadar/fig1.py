"""The motivating example of Fig. 1 (paper §III; spec hadar.md §5.9, Appendix B, check A7).

Instance: GPU types V100, P100, K80 with 2, 3, 1 GPUs; jobs J1 (W=3, 80 epochs), J2 (W=2, 30), J3 (W=2, 50);
``X`` = epochs per round of the whole job on each type, ``Y`` = Gavel's allocation matrix (paper numbers,
``data/paper_numbers.toml``). A job's rate on a composition of its W GPUs is the minimum X over the types
used (strict gang).

* :func:`brute_force`: breadth-first search over per-round assignments; returns the minimum number of
  rounds and the maximum busy GPU-rounds among schedules of that length (spec: 6 and 28 = 77.8%).
* :func:`gavel_mechanism`: Gavel's round mechanism with the given Y (per-type queues V100, P100, K80;
  priority Y x 1e9 before a type was received, else Y / (job time on type / total type time)); spec:
  R1 83% (J1->P100, J2->V100), R2 67%, 7 rounds, 71.4%.
* :func:`hadar_rounds`: Hadar's round count with the §2.8 DP (one server per type, no restart delay);
  reported only (the spec's prototype gives 7; the paper's figure shows 5, infeasible under P1, A16).

Complexity: the BFS is exponential in general but tiny here (hundreds of states).
"""

from __future__ import annotations

import itertools
import tomllib
from importlib import resources

import numpy as np

from gpuweave.hadar.dp import hadar_round
from gpuweave.hadar.problem import QueuedJob, RoundProblem

TYPES = ("V100", "P100", "K80")


def instance() -> dict:
    data = tomllib.loads(resources.files("gpuweave.hadar").joinpath("data", "paper_numbers.toml").read_text())
    f = data["fig1"]
    return {
        "capacity": list(f["capacity"]),
        "W": list(f["W"]),
        "epochs": list(f["epochs"]),
        "X": np.array(f["X"], dtype=float),
        "Y": np.array(f["Y"], dtype=float),
    }


def compositions(W: int, capacity: list[int]):
    for c in itertools.product(*(range(min(W, cap) + 1) for cap in capacity)):
        if sum(c) == W:
            yield c


def _round_options(active, inst):
    """All feasible sets of (job, composition) for one round (each job at most once, strict gang)."""
    cap = inst["capacity"]
    per_job = [[None] + list(compositions(inst["W"][j], cap)) for j in active]
    for choice in itertools.product(*per_job):
        used = [0] * len(cap)
        ok = True
        for c in choice:
            if c is None:
                continue
            for r, k in enumerate(c):
                used[r] += k
                if used[r] > cap[r]:
                    ok = False
                    break
            if not ok:
                break
        if ok:
            yield choice


def brute_force(inst: dict | None = None) -> tuple[int, int]:
    """(min rounds, max busy GPU-rounds over min-round schedules)."""
    inst = inst or instance()
    X = inst["X"]
    start = tuple(float(e) for e in inst["epochs"])
    frontier = {start: 0}
    rounds = 0
    while True:
        rounds += 1
        nxt: dict[tuple, int] = {}
        for rem, busy in frontier.items():
            active = [j for j, r in enumerate(rem) if r > 1e-9]
            for choice in _round_options(active, inst):
                new = list(rem)
                b = busy
                for j, c in zip(active, choice):
                    if c is None:
                        continue
                    rate = min(X[j][r] for r, k in enumerate(c) if k)
                    new[j] = max(0.0, new[j] - rate)
                    b += inst["W"][j]
                key = tuple(new)
                if nxt.get(key, -1) < b:
                    nxt[key] = b
        done = [b for rem, b in nxt.items() if all(r <= 1e-9 for r in rem)]
        if done:
            return rounds, max(done)
        frontier = nxt


def gavel_mechanism(inst: dict | None = None, max_rounds: int = 50) -> tuple[int, list[float], list[dict[int, int]]]:
    """(rounds, per-round utilisation, per-round {job: type}) of Gavel's mechanism with the paper's Y."""
    inst = inst or instance()
    X, Y = inst["X"], inst["Y"]
    J, R = X.shape
    rem = np.array(inst["epochs"], dtype=float)
    received = np.zeros((J, R))
    type_total = np.zeros(R)
    util, history = [], []
    total = sum(inst["capacity"])
    for _ in range(max_rounds):
        active = [j for j in range(J) if rem[j] > 1e-9]
        if not active:
            break
        free = list(inst["capacity"])
        chosen: dict[int, int] = {}
        for r in range(R):
            prio = []
            for j in active:
                if Y[j, r] <= 0:
                    continue
                if received[j, r] > 0:
                    p = Y[j, r] / (received[j, r] / type_total[r])
                else:
                    p = Y[j, r] * 1e9
                prio.append((p, j))
            prio.sort(key=lambda pj: -pj[0])  # stable, descending
            for _, j in prio:
                if j in chosen or inst["W"][j] > free[r]:
                    continue
                chosen[j] = r
                free[r] -= inst["W"][j]
        for j, r in chosen.items():
            rem[j] = max(0.0, rem[j] - X[j, r])
            received[j, r] += 1
            type_total[r] += 1
        util.append(sum(inst["W"][j] for j in chosen) / total)
        history.append(dict(chosen))
    return len(util), util, history


def hadar_rounds(inst: dict | None = None, max_rounds: int = 50) -> tuple[int, list[float]]:
    """Round count and per-round utilisation of the §2.8 DP on the instance (one server per type)."""
    inst = inst or instance()
    X = inst["X"]
    J, R = X.shape
    L = 1.0
    rem = np.array(inst["epochs"], dtype=float)
    prev: dict[int, tuple] = {}
    util = []
    total = sum(inst["capacity"])
    for k in range(max_rounds):
        active = [j for j in range(J) if rem[j] > 1e-9]
        if not active:
            break
        jobs = [
            QueuedJob(
                key=j,
                num_gpus=inst["W"][j],
                cons=X[j].copy(),
                uncons=X[j].copy(),
                remaining=rem[j],
                total_work=float(inst["epochs"][j]),
                prev=prev.get(j),
                started=j in prev,
            )
            for j in sorted(active, key=lambda j: (j not in prev, j))
        ]
        problem = RoundProblem(
            np.arange(R),
            np.array(inst["capacity"]),
            np.array(inst["capacity"]),
            R,
            jobs,
            round_length=L,
            now_slot=k,
            restart_delay=0.0,
        )
        plan = hadar_round(problem).plan
        prev = {}
        for j, alloc in plan.items():
            rate = min(X[j][h] for h, _ in alloc)
            rem[j] = max(0.0, rem[j] - rate)
            prev[j] = alloc
        util.append(sum(inst["W"][j] for j in plan) / total)
    return len(util), util
