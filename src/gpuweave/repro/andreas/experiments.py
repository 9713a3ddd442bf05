"""The paper's simulation campaign (Sec. V-B; spec §9.3): RG vs FIFO/EDF/PS per N, both scenarios.

Every (scenario, N, workload seed) instance is run once per baseline and once per RG seed (seed + 10(k+2));
costs are the real ex-post costs of §3. The reduction of RG vs a baseline B is the mean over instances
and RG seeds of (C_B − C_RG)/C_B, for total cost and for energy (spec §9.3 "Aggregation").
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gpuweave.andreas.workload import WORKLOAD_SEEDS, rg_seeds, scenario_jobs, scenario_nodes
from gpuweave.repro.andreas.simulate import run_policy

BASELINES = ("andreas-fifo", "edf", "priority")
OVERLOAD_M = (1.7, 1.7 / 4)  # [C-br] m_high, m_low (spec §9.3 item 5; AC16 overload sanity)
BASELINE_LABEL = {"andreas-fifo": "FIFO", "edf": "EDF", "priority": "PS", "andreas": "RG"}


def workload_seeds(count: int) -> list[int]:
    """1000, 4000, 9000, ... = 1000 (i+1)^2 (spec §9.3)."""
    return [WORKLOAD_SEEDS[i] if i < len(WORKLOAD_SEEDS) else 1000 * (i + 1) ** 2 for i in range(count)]


def scenario_runs(
    scenario: int,
    ns: list[int],
    n_workload_seeds: int = 1,
    n_rg_seeds: int = 1,
    *,
    load_scale: float = 1.0,
    max_it: int = 1000,
    baselines: tuple[str, ...] = BASELINES,
    overload: bool = False,
) -> list[dict]:
    """One row per run: scenario, N, seed, policy, rg_seed, costs, makespan, optimizer time per call.

    ``overload``: the [C-br] arrival constants m_high = 1.7, m_low = 1.7/4 (G_max = 2, i.e. scenario 1's own)
    instead of the defaults (spec §9.3 item 5, AC16)."""
    rows = []
    for N in ns:
        nodes = scenario_nodes(N, scenario)
        for ws in workload_seeds(n_workload_seeds):
            extra: dict[str, Any] = {"m_high": OVERLOAD_M[0], "m_low": OVERLOAD_M[1]} if overload else {}
            jobs = scenario_jobs(N, scenario, ws, load_scale=load_scale, **extra)
            runs = [(b, None) for b in baselines] + [("andreas", s) for s in rg_seeds(ws, n_rg_seeds)]
            for policy, rs in runs:
                opts: dict[str, Any] = {"seed": rs, "max_it": max_it} if policy == "andreas" else {}
                res = run_policy(nodes, jobs, policy, **opts)
                t = res.opt_times
                rows.append(
                    {
                        "scenario": scenario,
                        "N": N,
                        "jobs": len(jobs),
                        "workload_seed": ws,
                        "policy": policy,
                        "rg_seed": rs if rs is not None else "",
                        "energy_eur": res.real.energy,
                        "tardiness_eur": res.real.tardiness,
                        "total_eur": res.real.total,
                        "late_jobs": res.real.late_jobs,
                        "makespan_h": res.real.makespan / 3600.0,
                        "calls": int(t.size),
                        "opt_mean_s": float(t.mean()) if t.size else 0.0,
                        "opt_p95_s": float(np.percentile(t, 95)) if t.size else 0.0,
                        "opt_max_s": float(t.max()) if t.size else 0.0,
                        "max_queue": max((c.queue for c in res.calls), default=0),
                    }
                )
    return rows


def reductions(rows: list[dict]) -> dict[tuple[int, int, str], dict[str, float]]:
    """(scenario, N, baseline) -> mean relative reduction of RG's total cost and energy vs the baseline."""
    out: dict[tuple[int, int, str], dict[str, float]] = {}
    keys = sorted({(r["scenario"], r["N"]) for r in rows})
    for sc, N in keys:
        sub = [r for r in rows if r["scenario"] == sc and r["N"] == N]
        for b in sorted({r["policy"] for r in sub} - {"andreas"}):
            tot, en = [], []
            for r in (x for x in sub if x["policy"] == "andreas"):
                base = next(x for x in sub if x["policy"] == b and x["workload_seed"] == r["workload_seed"])
                tot.append((base["total_eur"] - r["total_eur"]) / base["total_eur"])
                en.append((base["energy_eur"] - r["energy_eur"]) / base["energy_eur"])
            out[(sc, N, b)] = {"total": float(np.mean(tot)), "energy": float(np.mean(en))}
    return out


def means(rows: list[dict], scenario: int, N: int, policy: str, key: str) -> float:
    vals = [r[key] for r in rows if r["scenario"] == scenario and r["N"] == N and r["policy"] == policy]
    return float(np.mean(vals)) if vals else float("nan")
