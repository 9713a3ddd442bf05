"""``gpuweave demo`` section: one small trace simulated, then run live on this machine, JCT side by side.

The live run uses the ``local`` executor with synthetic workers (no torch, no GPU: each worker paces its steps to
the profile store's rate for its declared GPU type) under Hadar, at 400 simulated seconds per wall second, on
the same declared cluster as ``examples/live`` (2 x V100 and 1 x K80 nodes, 2 GPUs each). It takes a few
seconds. Live JCTs come from the wall clock: the table shows each one in emulated seconds (wall seconds times the
time scale, comparable with the simulated JCT) and in wall seconds; both columns name "wall" (the behaviour
recordings leave such columns out).
"""

from __future__ import annotations

from typing import Any

from gpuweave.demo.sections import DemoContext, DemoSection, register_demo_section
from gpuweave.live.local import LocalExecutor
from gpuweave.plotting import figure, legend_outside, plot_text, save, series_style, write_csv
from gpuweave.report.section import Figure

CLUSTER_YAML = """name: live-demo
nodes:
  - {gpu: V100, gpus_per_node: 2, count: 2, name_prefix: v100-}
  - {gpu: K80, gpus_per_node: 2, count: 1, name_prefix: k80-}
"""
RESNET = "ResNet-18 (batch size 128)"
TRACE_ROWS = [
    f"j1,0,1,{RESNET},600",
    f"j2,0,2,{RESNET},900",
    "j3,60,1,A3C,500",
    f"j4,120,1,{RESNET},400",
    f"j5,200,2,{RESNET},700",
    "j6,300,1,A3C,300",
]
RUN = {"policy": "hadar", "round_length": 60, "restart_delay": 10}
TIME_SCALE = 400  # simulated seconds per wall second
EXECUTOR = {
    "kind": "local",
    "program": "synthetic",
    "time_scale": TIME_SCALE,
    "checkpoint_every": 0.5,
    "poll_interval": 0.03,
}
#: the live JCT columns: emulated seconds (the wall clock times the time scale, what the simulated JCT compares
#: with) and the wall seconds the job really took
LIVE_EMULATED = f"live JCT (emulated s = wall s \u00d7 {TIME_SCALE})"
LIVE_WALL = "live JCT (wall s)"


@register_demo_section("live", order=60)
def live_demo(ctx: DemoContext) -> DemoSection:
    # imported here: importing gpuweave.demo.live does without pydantic
    from gpuweave.cluster.config import SimulationConfig
    from gpuweave.cluster.run import run_simulation
    from gpuweave.live.config import LiveConfig
    from gpuweave.live.results import compare_jct, write_live_run
    from gpuweave.live.runtime import LiveRuntime

    ctx.out_dir.mkdir(parents=True, exist_ok=True)
    cluster = ctx.out_dir / "cluster.yaml"
    cluster.write_text(CLUSTER_YAML)
    trace = ctx.out_dir / "trace.csv"
    trace.write_text("\n".join(["job_id,arrival,num_gpus,job_type,duration", *TRACE_ROWS]) + "\n")
    files = {"cluster": str(cluster), "trace": str(trace), "seed": ctx.seed}
    sim_dir, live_dir = ctx.out_dir / "sim", ctx.out_dir / "live"
    run_simulation(SimulationConfig.model_validate({**RUN, **files}), sim_dir)
    config = LiveConfig.model_validate({**RUN, **files, "executor": EXECUTOR})
    runtime = LiveRuntime(config, LocalExecutor(), live_dir)
    runtime.run()
    summary = write_live_run(runtime, live_dir)
    scale = float(TIME_SCALE)
    table: list[dict[str, Any]] = [
        {
            "job": job,
            "sim JCT (s)": sim,
            LIVE_EMULATED: live,
            LIVE_WALL: None if live is None else live / scale,
            "live/sim (wall-clock)": ratio,
        }
        for job, sim, live, ratio in compare_jct(sim_dir, live_dir)
    ]
    attempts = sum(len(j.history) for j in runtime.jobs.values())
    text = (
        f"Hadar drove {summary['completed']} synthetic jobs live ({attempts} attempts) on the local executor at "
        f"{EXECUTOR['time_scale']} simulated s per wall s; GPUs declared, not detected (workers paced to the "
        "profile store's rates). Live JCTs are shown in emulated seconds (wall seconds times the time scale, "
        "comparable with the simulated ones) and in the wall seconds they took; they are longer mainly by each "
        f"launch's wall-clock latency, scaled up by the time scale. Compare the runs with: gpuweave report {sim_dir} "
        f"{live_dir}"
    )
    ratios = [row["live/sim (wall-clock)"] for row in table if isinstance(row["live/sim (wall-clock)"], float)]
    span = f"{min(ratios):.2f}-{max(ratios):.2f}× the simulated ones" if ratios else "not comparable"
    return DemoSection(
        title="Live: Hadar simulated vs run on the local executor",
        table=table,
        figures=[jct_figure(sim_dir, live_dir, ctx.out_dir / "live_jct.png")],
        text=text,
        summary=f"Live: Hadar drove {summary['completed']} jobs on local workers; their emulated-time JCTs are {span}.",
        runs=[sim_dir, live_dir],
    )


def jct_figure(sim_dir, live_dir, path):
    """Each job's JCT in the simulated and the live run, side by side, with live/sim over the pair.

    The JCTs come from the two runs' ``jobs.csv`` (:func:`gpuweave.live.results.compare_jct`), go to a CSV beside
    the PNG first, and the plot reads that CSV; a job one run did not finish has no bar (and no ratio)."""
    import csv

    # imported here: importing gpuweave.demo.live does without pydantic
    from gpuweave.live.results import compare_jct

    data = write_csv(
        path.with_suffix(".csv"),
        ("job", "sim_jct_s", "live_jct_s", "live_over_sim"),
        compare_jct(sim_dir, live_dir),
    )
    with open(data, newline="") as fh:
        rows = list(csv.DictReader(fh))

    def value(row, key):
        return float(row[key]) if row[key] else float("nan")

    fig, axes = figure(height=3.8)
    ax = axes[0, 0]
    xs = range(len(rows))
    for i, (key, label) in enumerate((("sim_jct_s", "simulated"), ("live_jct_s", "live (wall clock × time scale)"))):
        offsets = [x + (i - 0.5) * 0.38 for x in xs]
        ax.bar(offsets, [value(r, key) for r in rows], 0.38, label=label, color=series_style(i)["color"])
    for x, row in zip(xs, rows):
        if row["live_over_sim"]:
            top = max(value(row, "sim_jct_s"), value(row, "live_jct_s"))
            ax.annotate(
                f"{value(row, 'live_over_sim'):.2f}×",
                (x, top),
                xytext=(0, 3),
                textcoords="offset points",
                ha="center",
                va="bottom",
                fontsize="x-small",
            )
    ax.set_xticks(list(xs), [plot_text(r["job"]) for r in rows])
    ax.set_xlabel("job")
    ax.set_ylabel("JCT (simulated s)")
    ax.margins(y=0.12)
    ax.grid(False, axis="x")
    legend_outside(ax)
    return Figure(save(fig, path), _caption(rows), data)


def _caption(rows) -> str:
    ratios = {r["job"]: float(r["live_over_sim"]) for r in rows if r["live_over_sim"]}
    text = (
        "Job completion time of each job of the small trace under Hadar, simulated beside run live on local "
        "synthetic workers (live times are the wall clock times the time scale); the label over each pair is "
        "live/sim."
    )
    if not ratios:
        return text + " No job finished in both runs, so there is no ratio to read."
    worst = max(ratios, key=lambda job: ratios[job])
    return text + (
        f" Every live JCT is longer, by {min(ratios.values()):.2f}-{max(ratios.values()):.2f}×: mostly each launch's "
        f"wall-clock latency, scaled up by the time scale; the gap is largest for {worst} "
        f"({ratios[worst]:.2f}×)."
        if min(ratios.values()) > 1
        else f" Live/sim ranges from {min(ratios.values()):.2f} to {max(ratios.values()):.2f}× (largest: {worst})."
    )
