"""The experiment grid of the paper's Section 6: workloads x seeds x pack sizes x algorithms -> metrics.

Used by the reproduction (:mod:`gpuweave.repro.packs`), the demo and the workload gates of the tests.
Deterministic algorithms run once per (seed, k); randomized ones ``reps`` times with their own seeds
(spec R6: the mean over repetitions is reported, with min/max). The optimum (subset DP) is added as the
pseudo-algorithm ``"optimal"`` where the instance is small enough.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np

from gpuweave.packs.exact_dp import MAX_N, exact_all_k
from gpuweave.packs.metrics import evaluate
from gpuweave.packs.model import Profile, build_schedule
from gpuweave.packs.registry import get_algorithm, solve
from gpuweave.packs.workloads import workload

SEVEN = (
    "pack-approx",
    "pack-by-pack-1",
    "pack-by-pack-9",
    "random-pack-1",
    "random-pack-9",
    "random-proc-1",
    "random-proc-9",
)
OPTIMAL = "optimal"


@dataclass(frozen=True, slots=True)
class Record:
    workload: str
    seed: int
    k: int
    algo: str
    rep: int
    cost: float
    relative_cost: float
    packing_ratio: float
    relative_response_time: float
    runtime_ms: float
    iterations: float


def rep_seed(seed: int, k: int, rep: int) -> int:
    """Seed of repetition ``rep`` of a randomized heuristic on (instance ``seed``, ``k``)."""
    return int(np.random.SeedSequence([seed, k, rep]).generate_state(1)[0])


def run_instance(
    name: str,
    seed: int,
    prof: Profile,
    ks: Sequence[int],
    algos: Iterable[str],
    reps: int,
    *,
    optimal: bool = False,
) -> list[Record]:
    out: list[Record] = []
    if optimal and prof.n <= MAX_N:
        for k, res in exact_all_k(prof, list(ks)).items():
            sched = build_schedule(prof, res.packs, res.sigma, algo=OPTIMAL)
            m = evaluate(prof, sched)
            out.append(
                Record(
                    name,
                    seed,
                    k,
                    OPTIMAL,
                    0,
                    m.cost,
                    m.relative_cost,
                    m.packing_ratio,
                    m.relative_response_time,
                    float("nan"),
                    float("nan"),
                )
            )
    for algo in algos:
        randomized = get_algorithm(algo).randomized
        for k in ks:
            for rep in range(reps if randomized else 1):
                sched = solve(algo, prof, k, seed=rep_seed(seed, k, rep) if randomized else 0)
                m = evaluate(prof, sched)
                out.append(
                    Record(
                        name,
                        seed,
                        k,
                        algo,
                        rep,
                        m.cost,
                        m.relative_cost,
                        m.packing_ratio,
                        m.relative_response_time,
                        float(sched.info["runtime_ms"]),
                        float(sched.info.get("iterations", float("nan"))),
                    )
                )
    return out


def run_grid(
    name: str,
    seeds: Iterable[int],
    ks: Sequence[int],
    algos: Iterable[str] = SEVEN,
    reps: int = 1,
    *,
    optimal: bool = False,
) -> list[Record]:
    """All records of workload ``name`` ("I", "II", "III") over ``seeds``."""
    algos = list(algos)
    out: list[Record] = []
    for seed in seeds:
        out.extend(run_instance(name, seed, workload(name, seed), ks, algos, reps, optimal=optimal))
    return out


def mean_of(records: Iterable[Record], field: str, **where: object) -> float:
    """Mean of ``field`` over the records matching ``where`` (e.g. ``algo="pack-approx", k=16``)."""
    vals = [getattr(r, field) for r in records if all(getattr(r, key) == v for key, v in where.items())]
    if not vals:
        raise KeyError(f"no records for {where}")
    return float(np.mean(vals))


def ratio_to_optimal(records: Sequence[Record], algo: str, k: int) -> list[float]:
    """Per (seed, rep) cost ratio of ``algo`` to the optimum of the same instance and ``k``."""
    opt = {r.seed: r.cost for r in records if r.algo == OPTIMAL and r.k == k}
    return [r.cost / opt[r.seed] for r in records if r.algo == algo and r.k == k]
