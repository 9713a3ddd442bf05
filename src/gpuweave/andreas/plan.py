"""Plan one ANDREAS rescheduling point from a snapshot (``gpuweave cluster plan andreas STATE``).

Reads a snapshot (:mod:`gpuweave.andreas.snapshot`), runs Randomized Greedy (or a first-principle
baseline) and returns job -> node and GPU count, or postponed, with the proxy's cost terms (energy E,
tardiness T, postponement W; spec §5). ``exact`` also solves the exact MILP (small queues) and gives
RG's optimality gap. Cost: one RG run (:mod:`gpuweave.andreas.randomized_greedy`), plus the MILP with ``exact``.
"""

from __future__ import annotations

from pathlib import Path

from gpuweave.andreas.fpm import fpm_schedule
from gpuweave.andreas.milp import exact_optimum, optimality_gap
from gpuweave.andreas.randomized_greedy import RGConfig, randomized_greedy
from gpuweave.andreas.snapshot import load_snapshot
from gpuweave.errors import InputError
from gpuweave.limits import check_limit


def plan_snapshot(
    path: Path, method: str = "andreas", seed: int = 0, max_it: int = 1000, variant: str = "code", exact: bool = False
) -> dict:
    """The plan of one rescheduling point of the snapshot at ``path``; InputError on a bad method/variant."""
    if method not in ("andreas", "fifo", "edf", "priority"):
        raise InputError(f"unknown method {method!r} (andreas, fifo, edf, priority)", field="method")
    if variant not in ("code", "paper"):
        raise InputError(f"unknown proxy variant {variant!r} (code, paper)", field="variant")
    if max_it < 1:
        raise InputError(f"--max-it must be >= 1, got {max_it}", field="max_it")
    inst = load_snapshot(path)
    if exact:  # the MILP's size grows with the queue: refuse before the greedy runs, not after
        check_limit("andreas_exact_jobs", len(inst.job_ids), "jobs for --exact", file=path, field="jobs")
    if method == "andreas":
        sched = randomized_greedy(inst, seed, RGConfig(max_it=max_it, proxy_variant=variant))
    else:
        sched = fpm_schedule(inst, method, variant)
    jobs = []
    for j, jid in enumerate(inst.job_ids):
        n = int(sched.node_of[j])
        row = {"job": jid, "due": inst.due[j], "weight": inst.weight[j]}
        if n >= 0:
            k = int(sched.cfg_of[j])
            t = float(inst.times[j, k])
            row.update(
                node=inst.nodes[n].name,
                gpus=int(inst.cfg_g[k]),
                config=inst.label(k),
                time_s=t,
                end=inst.now + t,
                late_s=max(0.0, inst.now + t - inst.due[j]),
            )
        else:
            row.update(node=None, gpus=0, config="postponed", postpone_cost=float(inst.postpone_cost()[j]))
        jobs.append(row)
    out = {
        "now": inst.now,
        "method": method,
        "variant": variant,
        "jobs": jobs,
        "f_obj": sched.f,
        "energy": sched.energy,
        "tardiness": sched.tardiness,
        "postpone": sched.postpone,
        "f_greedy": sched.f_greedy,
        "iterations": sched.iterations,
    }
    if exact:
        opt = exact_optimum(inst, variant=variant)
        out["f_opt"] = opt.f
        out["gap"] = optimality_gap(sched.f, opt.f)
    return out
