"""Fig. 5 (spec §5.8, check B6): decision time of one round vs #jobs, Hadar and Gavel, log-log slopes."""

from __future__ import annotations

import csv

from gpuweave.repro.hadar.common import SIZES, paper_numbers
from gpuweave.repro.registry import ComparisonRow, ReproContext


def fig5_rows(ctx: ReproContext, reps: int) -> list[ComparisonRow]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    # imported here, not at the top: gpuweave.repro.hadar.scalability imports this module
    from gpuweave.repro.hadar.scalability import cpu_model, curve, loglog_slope

    data = curve(("hadar", "gavel"), SIZES, reps)
    with open(ctx.out_dir / "fig5_decision_time.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["policy", "jobs", "gpus", "seconds", "dp_fallback", "cpu"])
        for d in data:
            w.writerow([d["policy"], d["jobs"], d["gpus"], f"{d['seconds']:.6f}", d.get("fallback", ""), cpu_model()])
    fig, ax = plt.subplots(figsize=(6, 4))
    slopes = {}
    for p in ("hadar", "gavel"):
        xs = [d["jobs"] for d in data if d["policy"] == p]
        ys = [d["seconds"] for d in data if d["policy"] == p]
        slopes[p] = loglog_slope(xs, ys)
        ax.loglog(xs, ys, marker="o", label=f"{p} (slope {slopes[p]:.2f})")
    ax.set_xlabel("# jobs")
    ax.set_ylabel("decision time per round (s)")
    ax.set_title("Fig. 5: scheduling time vs jobs")
    ax.legend()
    fig.tight_layout()
    fig.savefig(ctx.out_dir / "fig5_decision_time.png", dpi=110)
    plt.close(fig)
    P = paper_numbers()["scalability"]
    at = {d["policy"]: d["seconds"] for d in data if d["jobs"] == SIZES[-1]}
    rows = [
        ComparisonRow("fig5", f"{p} decision time at {d['jobs']} jobs", None, d["seconds"], "s", cpu_model())
        for d in data
        for p in [d["policy"]]
    ]
    rows.append(
        ComparisonRow(
            "fig5",
            "Hadar decision time at ~2000 jobs",
            P["hadar_round_s_at_2000"],
            at["hadar"],
            "s",
            "paper: < 7 min; issue target < 2 s; B6 must be <= 420 s",
        )
    )
    hit = [d["jobs"] for d in data if d["policy"] == "hadar" and d.get("fallback")]
    rows.append(
        ComparisonRow(
            "fig5",
            "Hadar DP fallback (sizes where the state budget was hit)",
            None,
            len(hit),
            "sizes",
            "B6 report: "
            + (", ".join(map(str, hit)) + " jobs" if hit else "none")
            + "; the budget's greedy completion is "
            "the spec's fallback (dp.py, max_states=64)",
        )
    )
    rows.append(
        ComparisonRow(
            "fig5",
            "log-log slope Hadar - Gavel",
            None,
            slopes["hadar"] - slopes["gavel"],
            "",
            f"B6 within +-0.5: {'ok' if abs(slopes['hadar'] - slopes['gavel']) <= 0.5 else 'OUT'}; "
            f"Hadar {slopes['hadar']:.2f}, Gavel {slopes['gavel']:.2f}",
        )
    )
    return rows
