"""Gantt chart of a MIG schedule: slices on the y-axis, tasks as bars, reconfigurations shaded.

Each task is drawn as one bar spanning the rows of the slices it occupies (the 3-slice instance at
S0 also covers S3, hatched); create/destroy operations are grey (create) and red (destroy) bands on
the instance's rows. Matplotlib with the Agg backend; O(n + #ops) patches.
"""

from __future__ import annotations

from pathlib import Path

from gpuweave.hardware.catalog import get_mig_geometry
from gpuweave.mig.schedule import Schedule


def plot_gantt(schedule: Schedule, path: str | Path, title: str | None = None, label_tasks: bool = True) -> Path:
    from gpuweave.files import IMAGE_SUFFIXES, prepare_output_file

    path = prepare_output_file(path, field="gantt", suffixes=IMAGE_SUFFIXES)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch, Rectangle

    geom = get_mig_geometry(schedule.gpu)
    per = geom.num_slices
    rows = per * schedule.gpus
    fig, ax = plt.subplots(figsize=(10, 1.0 + 0.45 * rows))
    cmap = plt.get_cmap("tab20")
    names = sorted({t.task for t in schedule.tasks})
    color = {n: cmap(i % 20) for i, n in enumerate(names)}
    horizon = max([schedule.makespan] + [o.end for o in schedule.operations]) or 1.0

    def rows_of(gpu: int, size: int, start: int) -> tuple[list[int], list[int]]:
        pl = geom.placement(size, start)
        return [gpu * per + s for s in sorted(pl.slices)], [gpu * per + s for s in sorted(pl.occupancy - pl.slices)]

    for o in schedule.operations:
        own, extra = rows_of(o.gpu_index, o.size, o.start_slice)
        width = max(o.end - o.start, horizon * 0.002)
        for r in own + extra:
            ax.add_patch(
                Rectangle(
                    (o.start, r - 0.45), width, 0.9, color="0.55" if o.op == "create" else "#d62728", alpha=0.45, lw=0
                )
            )
    for t in schedule.tasks:
        own, extra = rows_of(t.gpu_index, t.size, t.start_slice)
        lo, hi = min(own), max(own)
        ax.add_patch(
            Rectangle(
                (t.start, lo - 0.4), t.end - t.start, hi - lo + 0.8, facecolor=color[t.task], edgecolor="black", lw=0.5
            )
        )
        for r in extra:
            ax.add_patch(
                Rectangle(
                    (t.start, r - 0.4),
                    t.end - t.start,
                    0.8,
                    facecolor="none",
                    edgecolor=color[t.task],
                    hatch="///",
                    lw=0.5,
                )
            )
        if label_tasks and (t.end - t.start) > horizon * 0.04:
            ax.text((t.start + t.end) / 2, (lo + hi) / 2, t.task, ha="center", va="center", fontsize=7, clip_on=True)
    ax.axvline(schedule.makespan, color="black", ls="--", lw=0.8)
    ax.set_xlim(0, horizon * 1.02)
    ax.set_ylim(rows - 0.5, -0.5)
    ax.set_yticks(range(rows))
    ax.set_yticklabels([f"GPU{r // per} S{r % per}" if schedule.gpus > 1 else f"S{r % per}" for r in range(rows)])
    ax.set_xlabel("time (s)")
    ax.set_title(title or f"{schedule.algo or 'schedule'} on {schedule.gpu}: makespan {schedule.makespan:.4g} s")
    ax.legend(
        handles=[Patch(color="0.55", alpha=0.45, label="create"), Patch(color="#d62728", alpha=0.45, label="destroy")],
        loc="lower right",
        fontsize=7,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
