"""ANDREAS workloads: job conversion and the simulation scenario generator (spec andreas.md §9.3).

Problem: build the paper's simulated instances (Sec. V-B): N nodes, half TESLA (V100) and half TURING
(T4) — node i is TESLA when i is even — with 2 V100 / 1 T4 per node (scenario 1) or 4 V100 / 2 T4
(scenario 2); J = 10N jobs (A16) drawn uniformly from the 10 profiled jobs, with "mixed" arrivals, due
dates and tardiness weights as in the authors' generator:

1. λ_j = N · G_max / t_j^(1), t_j^(1) the job's fastest 1-GPU full time, G_max = 2 or 4;
2. C = round_half_up(J/10) clusters; jobs ordered by id string ("JJ1" < "JJ10" < ...) and the i-th put
   in cluster i mod C; cluster k is "high" (m = 1.3/3) if k is even, "low" (m = 1.3/12) if odd, both
   multiplied by ``load_scale`` κ (default 1; §9.4); its rate r_k = mean_j(m_k · λ_j);
3. clusters are released in order; the first job arrives at 0 and every later one at
   last_t += Exponential(mean 1/r_k) (continuous clock across clusters);
4. d_j = S_j + U(t_min, min(3·t_min, t_max)) over the job's configurations (A17);
   ω_j ~ U(0.000253709514333333, 0.000443991650083333) €/s (= 10·c(TURING,1)/3600 … 10·c(TESLA,2)/3600).

A job becomes a :class:`~gpuweave.workload.job.Job` with ``work`` = epochs, ``job_type`` = application,
``priority`` = ω, ``deadline`` = absolute due date, ``num_gpus`` = 1 (what fixed-size policies use) and
``attrs["moldable"] = True`` (ANDREAS picks the GPU count). Draw order from one seeded numpy Generator:
catalogue picks, inter-arrivals, due dates, weights. Complexity O(J log J).
"""

from __future__ import annotations

import math

import numpy as np

from gpuweave.andreas.catalog import load_job_catalog, load_profile_table
from gpuweave.errors import InputError
from gpuweave.workload.job import Job

PRICE_EUR_PER_KWH = 0.17168313  # GPU-cost_server_4-2.csv (spec A25)
PUE = 1.33
SCENARIOS = {1: {"V100": 2, "T4": 1}, 2: {"V100": 4, "T4": 2}}
M_HIGH = 1.3 / 3
M_LOW = 1.3 / 12
OMEGA_RANGE = (0.000253709514333333, 0.000443991650083333)
WORKLOAD_SEEDS = (1000, 4000, 9000)  # 1000 (i+1)^2, spec §9.3


def rg_seeds(workload_seed: int, count: int = 5) -> list[int]:
    """The code's RG seeds per instance: seed + 10 (k + 2), k = 0..count-1 (spec §9.3)."""
    return [workload_seed + 10 * (k + 2) for k in range(count)]


def andreas_job(
    job_id: str,
    application: str,
    epochs: float,
    submission: float,
    due: float,
    weight: float,
    *,
    batch: int | None = None,
    snapshot_every: float | None = None,
) -> Job:
    """An ANDREAS job for the cluster simulator (``due`` absolute). InputError on bad values."""
    if not (epochs > 0 and math.isfinite(epochs)):
        raise InputError(f"job {job_id}: epochs must be a positive number, got {epochs}", field="epochs")
    if not (submission >= 0):
        raise InputError(f"job {job_id}: submission must be >= 0, got {submission}", field="submission")
    if not (weight >= 0 and math.isfinite(weight)):
        raise InputError(f"job {job_id}: tardiness weight must be >= 0, got {weight}", field="weight")
    if due < submission:
        raise InputError(
            f"job {job_id}: due date {due:g} is before its submission {submission:g}; give relative due dates "
            f"with due_relative (d_abs = S + d, spec A18)",
            field="due",
        )
    attrs: dict[str, object] = {"moldable": True, "epochs": epochs}
    if batch is not None:
        attrs["batch"] = batch
    if snapshot_every:
        attrs["snapshot_every"] = float(snapshot_every)
    return Job(
        job_id,
        float(submission),
        1,
        float(epochs),
        application,
        priority=float(weight),
        deadline=float(due),
        attrs=attrs,
    )


def scenario_nodes(n_nodes: int, scenario: int):
    """N nodes, TESLA (V100) when the index is even, TURING (T4) otherwise, at the scenario's GPU counts."""
    # imported here: importing gpuweave.andreas.workload does without pydantic
    from gpuweave.hardware.cluster_spec import Node

    if scenario not in SCENARIOS:
        raise InputError(f"scenario must be 1 or 2, got {scenario}", field="scenario")
    if n_nodes < 1:
        raise InputError(f"the number of nodes must be >= 1, got {n_nodes}", field="n_nodes")
    gpus = SCENARIOS[scenario]
    out = []
    for i in range(n_nodes):
        model = "V100" if i % 2 == 0 else "T4"
        prefix = "tesla" if model == "V100" else "turing"
        out.append(Node(i, f"{prefix}-{i}", model, gpus[model], PRICE_EUR_PER_KWH, PUE))
    return out


def full_times(application: str, epochs: float, max_gpus: dict[str, int] | None = None) -> dict[tuple[str, int], float]:
    """Full execution time per configuration: epochs x per-epoch time (restricted to the node sizes)."""
    table = load_profile_table().configs(application)
    return {
        k: epochs * s for k, s in table.items() if max_gpus is None or (k[0] in max_gpus and k[1] <= max_gpus[k[0]])
    }


def scenario_jobs(
    n_nodes: int,
    scenario: int,
    seed: int,
    *,
    load_scale: float = 1.0,
    m_high: float = M_HIGH,
    m_low: float = M_LOW,
    jobs_per_node: int = 10,
) -> list[Job]:
    """The J = 10N jobs of one instance (see the module docstring)."""
    if scenario not in SCENARIOS:
        raise InputError(f"scenario must be 1 or 2, got {scenario}", field="scenario")
    if not load_scale > 0:
        raise InputError(f"load_scale must be > 0, got {load_scale}", field="load_scale")
    g_max = max(SCENARIOS[scenario].values())
    catalog = load_job_catalog()
    rng = np.random.default_rng(seed)
    J = jobs_per_node * n_nodes
    picks = rng.integers(0, len(catalog), size=J)
    ids = [f"JJ{i + 1}" for i in range(J)]
    apps = [catalog[p][1] for p in picks]
    epochs = [catalog[p][2] for p in picks]
    batches = [catalog[p][3] for p in picks]
    times = [full_times(a, e, SCENARIOS[scenario]) for a, e in zip(apps, epochs)]
    t1 = np.array([min(v for (t, g), v in tt.items() if g == 1) for tt in times])
    lam = n_nodes * g_max / t1
    C = int(math.floor(J / 10 + 0.5))
    order = sorted(range(J), key=lambda j: ids[j])
    clusters: list[list[int]] = [[] for _ in range(C)]
    for i, j in enumerate(order):
        clusters[i % C].append(j)
    submission = np.zeros(J)
    last = 0.0
    first = True
    for k, members in enumerate(clusters):
        m = (m_high if k % 2 == 0 else m_low) * load_scale
        rate = float(np.mean(m * lam[members]))
        for j in members:
            if first:
                first = False
            else:
                last += rng.exponential(1.0 / rate)
            submission[j] = last
    jobs = []
    offsets = []
    for j in range(J):
        tmin, tmax = min(times[j].values()), max(times[j].values())
        offsets.append(rng.uniform(tmin, min(3 * tmin, tmax)))
    weights = rng.uniform(*OMEGA_RANGE, size=J)
    for j in range(J):
        jobs.append(
            andreas_job(
                ids[j],
                apps[j],
                epochs[j],
                float(submission[j]),
                float(submission[j] + offsets[j]),
                float(weights[j]),
                batch=batches[j],
            )
        )
    return jobs
