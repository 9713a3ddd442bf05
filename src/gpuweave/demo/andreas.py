"""Demo section: ANDREAS vs its baselines and the foundation policies on one heterogeneous workload.

A comparison no single paper has: RG (ANDREAS), ANDREAS' FIFO/EDF/PS, and the foundation's FIFO, SJF and
YARN-CS on the same ANDREAS scenario-1 workload (half 2×V100 and half 1×T4 nodes, DL jobs with due dates
and tardiness weights), all charged ANDREAS' energy model (node cost at GPUs in use) and weighted
tardiness, with the simulator's 10 s restart delay for every policy. The foundation policies run each job
on its nominal 1 GPU; ANDREAS and its baselines choose 1 or 2 GPUs per job.
"""

from __future__ import annotations

from typing import Any

from gpuweave.andreas.workload import scenario_jobs, scenario_nodes
from gpuweave.demo.sections import DemoContext, DemoSection, register_demo_section
from gpuweave.plotting import figure, group_identical, legend_outside, plot_text, save, series_style, write_csv
from gpuweave.report.section import Figure

POLICIES = ("andreas", "andreas-fifo", "edf", "priority", "fifo", "sjf", "yarn-cs")


@register_demo_section("andreas", order=15)
def andreas_section(ctx: DemoContext) -> DemoSection:
    # imported here: importing gpuweave.demo.andreas does without pydantic
    from gpuweave.repro.andreas.simulate import run_policy

    ctx.out_dir.mkdir(parents=True, exist_ok=True)
    N = 4 if ctx.quick else 8
    nodes = scenario_nodes(N, 1)
    jobs = scenario_jobs(N, 1, 1000 + ctx.seed)
    table: list[dict[str, Any]] = []
    for policy in POLICIES:
        opts: dict[str, Any] = {"seed": ctx.seed} if policy == "andreas" else {}
        res = run_policy(nodes, jobs, policy, restart_delay=10.0, **opts)
        done = [js for js in res.records.jobs if js.end is not None]
        table.append(
            {
                "policy": policy,
                "energy €": round(res.real.energy, 3),
                "tardiness €": round(res.real.tardiness, 3),
                "total €": round(res.real.total, 3),
                "late jobs": res.real.late_jobs,
                "avg JCT h": round(sum(js.end - js.job.arrival for js in done) / len(done) / 3600, 2),  # type: ignore[operator,misc]  # done: ended
                "makespan h": round(res.real.makespan / 3600, 1),
                "restarts": sum(js.restarts for js in res.records.jobs),
            }
        )
    import csv

    with open(ctx.out_dir / "andreas_cross_paper.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(table[0]))
        w.writeheader()
        w.writerows(table)
    best = min(table, key=lambda r: r["total €"])
    figure = cost_figure(ctx.out_dir / "andreas_cross_paper.csv", ctx.out_dir / "andreas_cost.png")
    runner_up = min((r for r in table if r["total €"] > best["total €"]), key=lambda r: r["total €"], default=best)
    saving = 1 - best["total €"] / runner_up["total €"] if runner_up["total €"] else 0.0
    return DemoSection(
        title=f"ANDREAS energy + tardiness: {N} nodes (2×V100 / 1×T4), {len(jobs)} DL jobs with due dates",
        table=table,
        figures=[figure],
        text=f"Lowest total cost: {best['policy']} ({best['total €']} €). Energy = node cost at GPUs in use "
        "(0.17168313 €/kWh, PUE 1.33); tardiness = Σ ω_j·lateness.",
        summary=f"ANDREAS: {best['policy']} has the lowest energy + tardiness cost ({best['total €']:.2f} €), "
        f"{saving:.0%} below the next policy ({runner_up['policy']}, {runner_up['total €']:.2f} €).",
        config={"nodes": N, "jobs": len(jobs), "policies": list(POLICIES), "restart_delay_s": 10, "seed": ctx.seed},
    )


def cost_figure(table_csv, path):
    """Energy and tardiness cost per policy as stacked bars, read back from the section's CSV; policies with
    identical costs share one bar labelled ``a = b``."""
    import csv

    with open(table_csv, newline="") as fh:
        rows = list(csv.DictReader(fh))
    keys = [(r["energy €"], r["tardiness €"]) for r in rows]
    groups = group_identical([r["policy"] for r in rows], keys)
    labels = [label for label, _ in groups]
    energy = [float(rows[m[0]]["energy €"]) for _, m in groups]
    tardiness = [float(rows[m[0]]["tardiness €"]) for _, m in groups]
    fig, axes = figure(height=4.2)
    ax = axes[0, 0]
    ax.grid(False, axis="y")
    y = range(len(labels))
    ax.barh(y, energy, color=series_style(0)["color"], label="energy")
    ax.barh(y, tardiness, left=energy, color=series_style(1)["color"], label="tardiness (weighted lateness)")
    ax.set_yticks(list(y), [plot_text(label) for label in labels])
    ax.invert_yaxis()
    ax.set_xlabel("cost (€)")
    legend_outside(ax)
    data = write_csv(
        path.with_suffix(".csv"), ("policies", "energy_eur", "tardiness_eur"), zip(labels, energy, tardiness)
    )
    best = min(range(len(labels)), key=lambda i: energy[i] + tardiness[i])
    caption = (
        "Energy and tardiness cost per policy, stacked; a shorter bar is cheaper. "
        f"{labels[best]} is cheapest at {energy[best] + tardiness[best]:.2f} € ({energy[best]:.2f} € energy, "
        f"{tardiness[best]:.2f} € tardiness); policies with identical costs share one bar."
    )
    return Figure(save(fig, path), caption, data)
