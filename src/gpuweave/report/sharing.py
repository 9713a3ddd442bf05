"""The plots of a ``sharing`` report (``gpuweave cluster fill`` result directories), from their CSV files only:

* allocation against arrived load, one line per run, with the arrived load itself as the unreachable ceiling
  (the shape of FGD's Fig. 7, ATC'23);
* the fragmentation ratio against arrived load;
* each run's GPUs at the end, one column per node (grouped by model), one cell per GPU, shaded by the share in use:
  fractions show as partial shades, where whole-GPU placements would show only full or empty cells.

Complexity: O(rows of the CSV files) plus matplotlib's drawing.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from gpuweave.plotting import figure, legend_outside, plot_text, save, series_style, write_csv
from gpuweave.report.section import Figure

if TYPE_CHECKING:
    from gpuweave.report.grains import GrainRun

CURVE_COLUMNS = ("load", "allocation", "fragment", "fragment_ratio")


def _curve(run: GrainRun, column: str) -> tuple[list[float], list[float]]:
    rows = run.table("curves.csv", CURVE_COLUMNS)
    points = [(float(r["load"]), float(r[column])) for r in rows if r[column] not in ("", None)]
    return [p[0] for p in points], [p[1] for p in points]


def _lines(runs: Sequence[GrainRun], column: str, path: Path, ylabel: str, ceiling: bool) -> tuple[Path, Path]:
    fig, axes = figure(height=4.2)
    ax = axes[0, 0]
    rows = []
    for i, run in enumerate(runs):
        x, y = _curve(run, column)
        ax.plot(x, y, label=plot_text(run.label), **series_style(i))
        rows += [(run.label, load, value) for load, value in zip(x, y)]
    if ceiling:
        ax.plot([0, 100], [0, 100], color="0.6", linestyle=":", linewidth=1, label="arrived (ceiling)")
    ax.set_xlabel("arrived GPU requests (% of the cluster's GPUs)")
    ax.set_ylabel(ylabel)
    legend_outside(ax, len(runs) + int(ceiling))
    return save(fig, path), write_csv(path.with_suffix(".csv"), ("run", "load", column), rows)


def occupancy_figure(run: GrainRun, path: Path) -> Figure:
    """One run's GPUs at the end, shaded by the share in use (from gpus.csv)."""
    rows = run.table("gpus.csv", ("node", "model", "gpu", "used_milli"), numeric=("gpu", "used_milli"))
    nodes: dict[str, tuple[str, dict[int, float]]] = {}
    for r in rows:
        nodes.setdefault(r["node"], (r["model"], {}))[1][int(r["gpu"])] = float(r["used_milli"]) / 1000.0
    ordered = sorted(nodes.items(), key=lambda item: (item[1][0], item[0]))
    width = max((max(gpus) + 1 for _, (_, gpus) in ordered if gpus), default=1)
    grid = np.full((width, len(ordered)), np.nan)
    for column, (_, (_, gpus)) in enumerate(ordered):
        for slot, used in gpus.items():
            grid[slot, column] = used
    fig, axes = figure(height=3.4)
    ax = axes[0, 0]
    image = ax.imshow(grid, aspect="auto", interpolation="nearest", cmap="viridis", vmin=0.0, vmax=1.0)
    fig.colorbar(image, ax=ax, label="share of the GPU in use")
    models = [model for _, (model, _) in ordered]
    starts = [i for i, m in enumerate(models) if i == 0 or m != models[i - 1]]
    gap = max(1, len(models) // 30)  # a label per group, unless it would sit on its neighbour's
    shown = [i for k, i in enumerate(starts) if k == 0 or i - starts[k - 1] >= gap]
    ax.set_xticks(shown, [plot_text(models[i]) for i in shown], rotation=30, ha="right")
    ax.grid(False)
    ax.set_ylabel("GPU of the node")
    ax.set_xlabel("nodes, grouped by GPU model")
    partial = int(((grid > 0) & (grid < 1)).sum())
    idle = int((grid == 0).sum())
    return Figure(
        save(fig, path),
        f"The GPUs of {run.label} at the end, one column per node and one cell per GPU (blank: the node has fewer "
        f"GPUs), shaded by the share in use: {partial} GPUs are partly used (fractions), {idle} are idle.",
        run.path / "gpus.csv",
    )


def sharing_plots(runs: Sequence[GrainRun], out_dir: Path) -> list[Figure]:
    """The figures of a sharing report (module docstring)."""
    png, data = _lines(runs, "allocation", out_dir / "sharing_allocation.png", "GPUs allocated (%)", ceiling=True)
    best = max(runs, key=lambda r: r.metrics.get("allocation_at_130") or 0.0)
    figures = [
        Figure(
            png,
            "Share of the cluster's GPUs allocated (fractions counted) as GPU requests arrive, one line per run; "
            "the dotted diagonal is what arrived. Where a line leaves the diagonal, tasks start to fail for "
            f"fragmentation or lack of room; {best.label} allocates most at 130 % "
            f"({best.metrics.get('allocation_at_130')} %).",
            data,
        )
    ]
    png, data = _lines(runs, "fragment_ratio", out_dir / "sharing_fragment_ratio.png", "fragmented (% of idle)", False)
    figures.append(
        Figure(
            png,
            "FGD's fragmentation ratio: the share of idle GPU capacity that the workload's typical tasks could not "
            "use, as requests arrive. Lower keeps room for the tasks that will come.",
            data,
        )
    )
    figures += [occupancy_figure(run, out_dir / f"sharing_gpus_{i:02d}.png") for i, run in enumerate(runs)]
    return figures
