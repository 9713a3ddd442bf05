"""One Hadar round on a cluster snapshot, as a plan (``gpuweave cluster plan hadar SNAPSHOT``).

Reads a snapshot (:mod:`gpuweave.cluster.hadar_snapshot`), runs the Hadar policy's round (the same code the simulator
runs) and returns, per job, the decision (start, keep, move, stop or wait), the placement by node and GPU model and
the rate it gives, plus the DP's value, states and fallback. Cost: one policy round (see :mod:`gpuweave.hadar`).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from gpuweave.cluster.hadar_snapshot import load_snapshot
from gpuweave.cluster.policies import make_policy
from gpuweave.cluster.policies.hadar import HadarPolicy
from gpuweave.cluster.rate_table import RateTable
from gpuweave.limits import check_limit


def plan_snapshot(path: Path, **options: Any) -> dict[str, Any]:
    """The plan of one Hadar round on the snapshot at ``path`` under the policy ``options``."""
    view = load_snapshot(path)
    if options.get("solver") == "exact":  # the round's MILP grows with jobs x GPUs
        n_jobs = len(view.running) + len(view.pending)
        check_limit("hadar_exact_jobs", n_jobs, "jobs for --solver exact", file=path, field="jobs")
    policy = make_policy("hadar", round_length=view.round_length, work_conserving=False, **options)
    assert isinstance(policy, HadarPolicy)
    t0 = time.perf_counter()
    wanted = policy.plan_round(view)
    seconds = time.perf_counter() - t0
    table = RateTable(view.profiles, view.models)
    col = {m: i for i, m in enumerate(view.models)}
    jobs = []
    for js in [*view.running.values(), *view.pending.values()]:
        placement = wanted.get(js.job.job_id)
        row = {"job": js.job.job_id, "job_type": js.job.job_type, "gpus": js.job.num_gpus, "remaining": js.remaining}
        if placement is None:
            row.update(decision="stop" if js.placement else "wait", placement=[], rate=0.0)
        else:
            cons, uncons = table.of_job(js.job)
            rates = uncons if len(placement) > 1 else cons
            rate = min(float(rates[col[view.nodes[h].gpu_model]]) for h, _ in placement)
            decision = (
                "start" if js.placement is None else ("keep" if tuple(placement) == tuple(js.placement) else "move")
            )
            row.update(
                decision=decision,
                rate=rate,
                placement=[
                    {"node": view.nodes[h].name, "gpu": view.nodes[h].gpu_model, "gpus": g} for h, g in placement
                ],
            )
        jobs.append(row)
    result = policy.last_result
    return {
        "now": view.now,
        "round_length": view.round_length,
        "options": {k: v for k, v in options.items()},
        "jobs": jobs,
        "value": result.value if result else 0.0,
        "states": result.states if result else 0,
        "fallback": bool(result.fallback) if result else False,
        "decision_seconds": seconds,
    }
