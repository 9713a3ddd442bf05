"""Demo section: every registered cluster policy on the same Philly-like trace and heterogeneous cluster.

The trace is generated from the bundled Gavel throughputs (Gavel's Philly distribution, seeded) and run
on the bundled Gavel-style cluster (20 V100, 20 P100, 20 K80): one comparison table and the JCT CDF,
completion, busy-GPU and power plots.
"""

from __future__ import annotations

import time

from gpuweave.demo_sections import DemoContext, DemoSection, register_demo_section

DEMO_CLUSTER = "gavel-60"
DEMO_JOBS = 200
DEMO_QUICK_JOBS = 60
DEMO_RATE_PER_HOUR = 8.0

COLUMNS = [
    ("avg_jct_s", "avg JCT (h)", 1 / 3600),
    ("p99_jct_s", "p99 JCT (h)", 1 / 3600),
    ("makespan_s", "makespan (h)", 1 / 3600),
    ("time_to_50pct_s", "50% done (h)", 1 / 3600),
    ("mean_queueing_delay_s", "mean wait (h)", 1 / 3600),
    ("utilization", "GPU util", 1.0),
    ("energy_kwh", "energy (kWh)", 1.0),
    ("restarts", "restarts", 1),
]


@register_demo_section("cluster", order=10)
def cluster_demo(ctx: DemoContext) -> DemoSection:
    from gpuweave.cluster.config import SimulationConfig
    from gpuweave.cluster.policies import policy_names
    from gpuweave.cluster.run import run_simulation
    from gpuweave.report.plots import plot_runs
    from gpuweave.report.rundir import load_runs

    jobs = DEMO_QUICK_JOBS if ctx.quick else DEMO_JOBS
    rows = []
    run_dirs = []
    for name in policy_names():
        cfg = SimulationConfig(
            policy=name, cluster=DEMO_CLUSTER, jobs=jobs, rate_per_hour=DEMO_RATE_PER_HOUR, seed=ctx.seed
        )
        t0 = time.perf_counter()
        run_dir = ctx.out_dir / "runs" / name
        summary = run_simulation(cfg, run_dir)
        wall = time.perf_counter() - t0
        run_dirs.append(run_dir)
        row: dict[str, object] = {"policy": name}
        for key, label, scale in COLUMNS:
            value = summary.get(key)
            row[label] = value * scale if isinstance(value, (int, float)) else value
        row["sim wall (s)"] = round(wall, 2)
        rows.append(row)
    rows.sort(key=lambda r: r["avg JCT (h)"])
    figures = plot_runs(load_runs(run_dirs), ctx.out_dir)
    return DemoSection(
        title=f"Cluster policies: {jobs} Philly-like jobs on {DEMO_CLUSTER} (20 V100, 20 P100, 20 K80)",
        table=rows,
        images=[path for _, path in figures],
        text=(
            f"Trace: Gavel's Philly distribution, {DEMO_RATE_PER_HOUR:g} jobs/hour, seed {ctx.seed}; every policy is "
            "judged by the same simulator (gang, capacity, slowest-model speed, 10 s restart delay, energy). "
            f"Per-policy result directories: {ctx.out_dir / 'runs'}."
        ),
    )
