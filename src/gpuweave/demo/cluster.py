"""Demo section: every registered cluster policy on the same Philly-like trace and heterogeneous cluster.

The trace is the bundled ``philly-like-200.csv`` (Gavel's Philly distribution over the bundled Gavel
throughputs, 4 jobs/hour, seed 0; see workload/data/SOURCES.md), run on the bundled Gavel-style cluster
(20 V100, 20 P100, 20 K80): one comparison table and the JCT CDF, completion, busy-GPU, GRU CDF (utilisation per
360 s round, Hadar's Fig. 3) and power plots.
:data:`DEMO_VARIANTS` adds named variants (Hadar with the slack-srpt Q order) beside the registered policies.
``--quick`` generates a 60-job trace with the same distribution instead.
"""

from __future__ import annotations

import time
from typing import Any

from gpuweave.cluster.policies import policy_names
from gpuweave.demo.sections import DemoContext, DemoSection, register_demo_section
from gpuweave.report.html import COMPARED
from gpuweave.report.page import winners_sentence
from gpuweave.report.plots import merge_identical, plot_runs
from gpuweave.report.rundir import load_runs

DEMO_CLUSTER = "gavel-60"
DEMO_TRACE = "philly-like-200.csv"
DEMO_QUICK_JOBS = 60
DEMO_QUICK_RATE_PER_HOUR = 8.0
# Named variants shown beside the registered policies (the paper's behaviour stays each policy's default).
#: the metrics the report's summary names a winner for
SUMMARY_METRICS = ("avg_jct_s", "p99_jct_s", "makespan_s", "utilization", "energy_kwh")
DEMO_VARIANTS = {"hadar[slack-srpt]": ("hadar", {"order": "slack-srpt"})}

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
    from importlib.resources import files

    # imported here: importing gpuweave.demo.cluster does without pydantic
    from gpuweave.cluster.config import SimulationConfig
    from gpuweave.cluster.run import run_simulation

    source: dict[str, Any]
    if ctx.quick:
        source = {"jobs": DEMO_QUICK_JOBS, "rate_per_hour": DEMO_QUICK_RATE_PER_HOUR}
        what = f"{DEMO_QUICK_JOBS} generated Philly-like jobs ({DEMO_QUICK_RATE_PER_HOUR:g}/hour, seed {ctx.seed})"
    else:
        trace = files("gpuweave.workload") / "data" / "traces" / DEMO_TRACE
        source = {"trace": str(trace)}
        what = f"the bundled {DEMO_TRACE}"
    rows: list[dict[str, Any]] = []
    run_dirs = []
    runs: list[tuple[str, str, dict[str, Any]]] = [(name, name, {}) for name in policy_names()]
    runs += [(label, p, o) for label, (p, o) in DEMO_VARIANTS.items()]
    for name, policy, options in runs:
        cfg = SimulationConfig(policy=policy, policy_options=options, cluster=DEMO_CLUSTER, seed=ctx.seed, **source)
        t0 = time.perf_counter()
        run_dir = ctx.out_dir / "runs" / name
        summary = run_simulation(cfg, run_dir)
        wall = time.perf_counter() - t0
        run_dirs.append(run_dir)
        row: dict[str, Any] = {"policy": name}
        for key, label, scale in COLUMNS:
            value = summary.get(key)
            row[label] = value * scale if isinstance(value, (int, float)) else value
        row["sim wall (s)"] = round(wall, 2)
        rows.append(row)
    rows.sort(key=lambda r: r["avg JCT (h)"])
    loaded = load_runs(run_dirs)
    figures = plot_runs(loaded, ctx.out_dir)
    best = winners_sentence(merge_identical(loaded), COMPARED, SUMMARY_METRICS)
    return DemoSection(
        title=f"Cluster policies on {DEMO_CLUSTER} (20 V100, 20 P100, 20 K80): {what}",
        table=rows,
        figures=figures,
        summary=f"Cluster: {len(runs)} policies on {DEMO_CLUSTER} with {what}; " + best[0].lower() + best[1:],
        runs=run_dirs,
        text=(
            "Trace: Gavel's Philly distribution of sizes and durations over the bundled Gavel throughputs. "
            "Every policy is "
            "judged by the same simulator (gang, capacity, slowest-model speed, 10 s restart delay, energy). "
            f"Per-policy result directories: {ctx.out_dir / 'runs'}."
        ),
    )
