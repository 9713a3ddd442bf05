"""Pack chart: packs as consecutive time blocks, processors on the y axis (house style of gpuweave.plotting).

Each task is a rectangle from its pack's start to its own end, over the processors it holds inside the pack
(tasks of a pack are stacked from processor 0 upwards in pack order). Idle processor time is left blank, so
the packing ratio is visible as the filled share of each block. :func:`plot_pack_rows` draws from the rows of a
result directory's ``packs.csv``; :func:`plot_packs` from a schedule in memory (it builds the same rows). The
time axis is in the unit the schedule's length calls for (:func:`gpuweave.units.axis_unit`).
``O(n)`` rectangles.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from gpuweave.packs.model import PackSchedule, Profile
from gpuweave.plotting import figure, fill_style, plot_text, save, text_colour
from gpuweave.units import axis_unit, duration_text

#: task names are written inside their boxes up to this many tasks
LABEL_MAX_TASKS = 40


def plot_pack_rows(rows: Sequence[dict[str, str]], procs: int, path: str | Path, *, title: str | None = None) -> Path:
    """Draw ``packs.csv`` rows (pack, pack_start, pack_cost, task, procs, time) over ``procs`` processors."""
    from matplotlib.patches import Rectangle

    fig, axes = figure(height=4.4)
    ax = axes[0, 0]
    ax.grid(False)
    offsets: dict[str, int] = {}
    tasks = list(dict.fromkeys(row["task"] for row in rows))
    index = {t: i for i, t in enumerate(tasks)}
    end_s = max((float(row["pack_start"]) + float(row["pack_cost"]) for row in rows), default=0.0)
    unit = axis_unit([end_s])
    end = 0.0
    for row in rows:
        start, cost, used, time = (
            float(row["pack_start"]) / unit.seconds,
            float(row["pack_cost"]) / unit.seconds,
            int(row["procs"]),
            float(row["time"]) / unit.seconds,
        )
        offset = offsets.get(row["pack"], 0)
        if offset == 0:
            ax.add_patch(Rectangle((start, 0), cost, procs, fill=False, ec="0.3", lw=1.0, ls="--"))
        i = index[row["task"]]
        ax.add_patch(Rectangle((start, offset), time, used, edgecolor="black", lw=0.4, **fill_style(i)))
        if len(tasks) <= LABEL_MAX_TASKS:
            ax.text(
                start + time / 2,
                offset + used / 2,
                plot_text(row["task"]),
                ha="center",
                va="center",
                fontsize=6,
                clip_on=True,
                color=text_colour(i),
            )
        offsets[row["pack"]] = offset + used
        end = max(end, start + cost)
    ax.set_xlim(0, end * 1.01 if end > 0 else 1)
    ax.set_ylim(0, procs)
    ax.set_xlabel(f"time ({unit.symbol})")
    ax.set_ylabel("processors")
    ax.set_title(title or f"{len(offsets)} packs, cost {duration_text(end_s)}")
    return save(fig, path)


def pack_rows(profile: Profile, schedule: PackSchedule) -> list[dict[str, str]]:
    """The rows ``packs.csv`` holds for ``schedule`` (as text, like the CSV reader gives them)."""
    return [
        {
            "pack": str(b),
            "pack_start": repr(pk.start),
            "pack_cost": repr(pk.cost),
            "task": profile.names[i],
            "procs": str(j),
            "time": repr(t),
        }
        for b, pk in enumerate(schedule.packs)
        for i, j, t in zip(pk.tasks, pk.procs, pk.times)
    ]


def plot_packs(profile: Profile, schedule: PackSchedule, path: str | Path, *, title: str | None = None) -> Path:
    """Write the chart of an in-memory schedule to ``path`` (PNG) and return it."""
    title = title or f"{schedule.algo}: {len(schedule.packs)} packs, cost {duration_text(schedule.cost)}"
    return plot_pack_rows(pack_rows(profile, schedule), schedule.p, path, title=title)
