"""``gpuweave demo`` section: the seven heuristics of the paper on a Workload-II instance (65 tasks, p = 16).

No optimum is computed (infeasible at n = 65, as in the paper); the heuristics are compared by the metrics of
Section 6.2 at k = 4 and k = 16, and the pack chart of the heuristic of choice (pack-by-pack-9) at k = 16 is
written as ``packs_gantt.png``. Runs on the bundled SYN-REF generator in well under a second.
"""

from __future__ import annotations

from typing import Any

from gpuweave.demo.sections import DemoContext, DemoSection, register_demo_section
from gpuweave.packs.experiments import SEVEN
from gpuweave.packs.metrics import evaluate
from gpuweave.packs.registry import solve
from gpuweave.packs.workloads import workload
from gpuweave.plotting import figure, legend_outside, plot_text, save, series_style, write_csv
from gpuweave.report.grains import GrainRun, packs_chart_figure
from gpuweave.report.section import Figure
from gpuweave.results import read_result_dir

DEMO_KS = (4, 16)
CHART_ALGO = "pack-by-pack-9"


@register_demo_section("packs", order=30)
def packs_demo(ctx: DemoContext) -> DemoSection:
    # imported here: importing gpuweave.demo.packs does without pydantic
    from gpuweave.packs.results import write_packs_result

    prof = workload("II", seed=ctx.seed)
    table: list[dict[str, Any]] = []
    best = None
    for k in DEMO_KS:
        for algo in SEVEN:
            sched = solve(algo, prof, k, seed=ctx.seed)
            sched.validate(prof, k)
            m = evaluate(prof, sched)
            table.append(
                {
                    "k": k,
                    "heuristic": algo,
                    "packs": len(sched.packs),
                    "relative cost": round(m.relative_cost, 4),
                    "packing ratio": round(m.packing_ratio, 4),
                    "relative response time": round(m.relative_response_time, 4),
                    "running time (ms)": round(m.runtime_ms or 0.0, 3),
                }
            )
            if k == DEMO_KS[-1] and algo == CHART_ALGO:
                best = (sched, m)
    ctx.out_dir.mkdir(parents=True, exist_ok=True)
    assert best is not None
    run_dir = write_packs_result(
        ctx.out_dir / "runs" / f"{CHART_ALGO}-k{DEMO_KS[-1]}",
        prof,
        best[0],
        DEMO_KS[-1],
        {"workload": "II", "algo": CHART_ALGO, "k": DEMO_KS[-1]},
        ctx.seed,
    )
    chart = packs_chart_figure(
        GrainRun(run_dir, read_result_dir(run_dir), label=f"{CHART_ALGO}, k={DEMO_KS[-1]}"),
        ctx.out_dir / "packs_gantt.png",
        title=f"Workload-II (n=65, p=16), {CHART_ALGO}, k={DEMO_KS[-1]}: relative cost {best[1].relative_cost:.3f}",
    )
    text = (
        f"Co-scheduling 65 synthetic parallel tasks (SYN-REF seed {ctx.seed}) on 16 processors "
        "in packs of at most k tasks. "
        f"Relative cost is against running every task alone on all processors; {CHART_ALGO} at k={DEMO_KS[-1]} "
        f"cuts the total time to {best[1].relative_cost:.1%} of that baseline with {len(best[0].packs)} packs."
    )
    top = min((r for r in table if r["k"] == DEMO_KS[-1]), key=lambda r: r["relative cost"])
    return DemoSection(
        title="Co-scheduling packs (Aupy et al. 2013), Workload-II",
        table=table,
        figures=[heuristics_figure(table, ctx.out_dir / "packs_heuristics.png"), chart],
        text=text,
        summary=f"Packs: at k={DEMO_KS[-1]}, {top['heuristic']} has the lowest relative cost "
        f"({top['relative cost']:.3f} of running every task alone on all processors).",
        runs=[run_dir],
        config={"workload": "II", "tasks": 65, "procs": 16, "k": list(DEMO_KS), "heuristics": list(SEVEN)},
    )


def heuristics_figure(table, path):
    """Relative cost per heuristic at each k, grouped bars; the table goes to CSV first and the plot reads it."""
    import csv

    data = write_csv(
        path.with_suffix(".csv"),
        ("k", "heuristic", "relative_cost"),
        ((r["k"], r["heuristic"], r["relative cost"]) for r in table),
    )
    with open(data, newline="") as fh:
        rows = list(csv.DictReader(fh))
    algos = list(dict.fromkeys(r["heuristic"] for r in rows))
    ks = list(dict.fromkeys(r["k"] for r in rows))
    fig, axes = figure(height=4.0)
    ax = axes[0, 0]
    width = 0.8 / len(ks)
    for i, k in enumerate(ks):
        values = {r["heuristic"]: float(r["relative_cost"]) for r in rows if r["k"] == k}
        xs = [a + (i - (len(ks) - 1) / 2) * width for a in range(len(algos))]
        ax.bar(
            xs, [values.get(a, float("nan")) for a in algos], width, label=f"k = {k}", color=series_style(i)["color"]
        )
    ax.set_xticks(range(len(algos)), [plot_text(a) for a in algos], rotation=20, ha="right")
    ax.set_ylabel("relative cost")
    ax.grid(False, axis="x")
    legend_outside(ax)
    best = min(rows, key=lambda r: float(r["relative_cost"]))
    caption = (
        "Relative cost of each heuristic (total time against every task alone on all processors) with packs of "
        f"at most k tasks; lower is better. Larger packs help the pack-based heuristics most: the lowest is "
        f"{best['heuristic']} at k = {best['k']} ({float(best['relative_cost']):.3f})."
    )
    return Figure(save(fig, path), caption, data)
