"""The evaluation measures of the paper's Section 6.2 (spec 4.2).

* relative cost ``= cost(S) / C_1`` with ``C_1 = sum_i t_{i,p}`` (the "1-pack schedule" baseline, R9);
* packing ratio ``= sum_i t_{i,sigma(i)} sigma(i) / (p cost(S))`` (1 means no idle processor time);
* relative response time ``= R_hat / R``: ``R`` is the mean completion time of the baseline in
  shortest-first order; ``R_hat`` orders the packs by increasing cost, larger pack first on ties (R14), and
  a task completes ``t_{i,sigma(i)}`` after its pack starts;
* running time of the algorithm in milliseconds (from ``schedule.info['runtime_ms']`` when present).

Complexity: ``O(n log n)``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from gpuweave.packs.model import PackSchedule, Profile, pack_order_key


@dataclass(frozen=True, slots=True)
class Metrics:
    cost: float
    relative_cost: float
    packing_ratio: float
    relative_response_time: float
    runtime_ms: float | None = None

    def as_dict(self) -> dict[str, float | None]:
        return asdict(self)


def baseline_response(profile: Profile) -> float:
    """``R``: mean completion time of the tasks run alone on ``p`` processors, shortest first."""
    tp = np.sort(profile.times[:, -1])
    return float(np.cumsum(tp).mean())


def response_time(schedule: PackSchedule) -> float:
    """``R_hat``: mean task completion time with packs in R14 order (independent of the stored order)."""
    packs = sorted(schedule.packs, key=lambda pk: pack_order_key(pk.cost, len(pk.tasks)))
    clock = 0.0
    total = 0.0
    for pk in packs:
        total += sum(clock + t for t in pk.times)
        clock += pk.cost
    return total / schedule.n


def evaluate(profile: Profile, schedule: PackSchedule) -> Metrics:
    cost = schedule.cost
    work = sum(t * j for pk in schedule.packs for t, j in zip(pk.times, pk.procs))
    return Metrics(
        cost=cost,
        relative_cost=cost / profile.baseline_cost(),
        packing_ratio=work / (profile.p * cost),
        relative_response_time=response_time(schedule) / baseline_response(profile),
        runtime_ms=schedule.info.get("runtime_ms"),
    )
