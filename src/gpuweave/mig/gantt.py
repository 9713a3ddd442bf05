"""Gantt chart of a MIG schedule: slices on the y-axis, tasks as bars, reconfigurations shaded.

Each task is drawn as one bar spanning the rows of the slices it occupies (the 3-slice instance at S0 also
covers S3, hatched); create/destroy operations are grey (create) and vermillion (destroy) bands on the
instance's rows. House style of :mod:`gpuweave.plotting`: colour-blind-safe task colours, the legend under the
chart so it covers no bar. O(n + #ops) patches.
"""

from __future__ import annotations

from pathlib import Path

from gpuweave.files import IMAGE_SUFFIXES, prepare_output_file
from gpuweave.hardware.catalog import get_mig_geometry
from gpuweave.mig.schedule import Schedule

CREATE_COLOUR = "0.6"
DESTROY_COLOUR = "#D55E00"


def plot_gantt(schedule: Schedule, path: str | Path, title: str | None = None, label_tasks: bool = True) -> Path:
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch, Rectangle

    # imported here: importing gpuweave.mig.gantt does without numpy
    from gpuweave.plotting import figure, fill_style, legend_below, plot_text, save, text_colour

    path = prepare_output_file(path, field="gantt", suffixes=IMAGE_SUFFIXES)
    geom = get_mig_geometry(schedule.gpu)
    per = geom.num_slices
    rows = per * schedule.gpus
    fig, axes = figure(height=1.6 + 0.42 * rows)
    ax = axes[0, 0]
    ax.grid(False)
    names = sorted({t.task for t in schedule.tasks})
    index = {n: i for i, n in enumerate(names)}
    horizon = max([schedule.makespan] + [o.end for o in schedule.operations]) or 1.0

    def rows_of(gpu: int, size: int, start: int) -> tuple[list[int], list[int]]:
        pl = geom.placement(size, start)
        return [gpu * per + s for s in sorted(pl.slices)], [gpu * per + s for s in sorted(pl.occupancy - pl.slices)]

    for o in schedule.operations:
        own, extra = rows_of(o.gpu_index, o.size, o.start_slice)
        width = max(o.end - o.start, horizon * 0.002)
        colour = CREATE_COLOUR if o.op == "create" else DESTROY_COLOUR
        for r in own + extra:
            ax.add_patch(Rectangle((o.start, r - 0.45), width, 0.9, color=colour, alpha=0.5, lw=0))
    for t in schedule.tasks:
        own, extra = rows_of(t.gpu_index, t.size, t.start_slice)
        lo, hi = min(own), max(own)
        style = fill_style(index[t.task])
        ax.add_patch(Rectangle((t.start, lo - 0.4), t.end - t.start, hi - lo + 0.8, edgecolor="black", lw=0.5, **style))
        for r in extra:
            ax.add_patch(
                Rectangle(
                    (t.start, r - 0.4),
                    t.end - t.start,
                    0.8,
                    facecolor="none",
                    edgecolor=style["facecolor"],
                    hatch="///",
                    lw=0.5,
                )
            )
        if label_tasks and (t.end - t.start) > horizon * 0.04:
            ax.text(
                (t.start + t.end) / 2,
                (lo + hi) / 2,
                plot_text(t.task),
                ha="center",
                va="center",
                fontsize=7,
                clip_on=True,
                color=text_colour(index[t.task]),
            )
    ax.axvline(schedule.makespan, color="black", ls="--", lw=0.8)
    ax.set_xlim(0, horizon * 1.02)
    ax.set_ylim(rows - 0.5, -0.5)
    ax.set_yticks(range(rows))
    ax.set_yticklabels([f"GPU{r // per} S{r % per}" if schedule.gpus > 1 else f"S{r % per}" for r in range(rows)])
    ax.set_xlabel("time (s)")
    ax.set_title(
        plot_text(title or f"{schedule.algo or 'schedule'} on {schedule.gpu}: makespan {schedule.makespan:.4g} s")
    )
    handles = [
        Patch(color=CREATE_COLOUR, alpha=0.5, label="create instance"),
        Patch(color=DESTROY_COLOUR, alpha=0.5, label="destroy instance"),
        Patch(facecolor="none", edgecolor="0.3", hatch="///", label="slice held, not used"),
        Line2D([0], [0], color="black", ls="--", lw=0.8, label="makespan"),
    ]
    legend_below(fig, handles, ncol=4)
    return save(fig, path)
