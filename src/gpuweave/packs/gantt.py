"""Pack chart: packs as consecutive time blocks, processors on the y axis (matplotlib, Agg).

Each task is a rectangle from its pack's start to its own end, over the processors it holds inside the pack
(tasks of a pack are stacked from processor 0 upwards in pack order). Idle processor time is left blank, so
the packing ratio is visible as the filled share of each block. ``O(n)`` rectangles.
"""

from __future__ import annotations

from pathlib import Path

from gpuweave.packs.model import PackSchedule, Profile


def plot_packs(profile: Profile, schedule: PackSchedule, path: str | Path, *, title: str | None = None) -> Path:
    """Write the chart to ``path`` (PNG) and return it."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    path = Path(path)
    fig, ax = plt.subplots(figsize=(10, 4.2))
    cmap = plt.get_cmap("tab20")
    for b, pk in enumerate(schedule.packs):
        ax.add_patch(Rectangle((pk.start, 0), pk.cost, schedule.p, fill=False, ec="0.3", lw=1.2, ls="--"))
        offset = 0
        for i, j, t in zip(pk.tasks, pk.procs, pk.times):
            ax.add_patch(Rectangle((pk.start, offset), t, j, fc=cmap(i % 20), ec="k", lw=0.4))
            if schedule.n <= 40:
                ax.text(
                    pk.start + t / 2,
                    offset + j / 2,
                    profile.names[i],
                    ha="center",
                    va="center",
                    fontsize=6,
                    clip_on=True,
                )
            offset += j
    ax.set_xlim(0, schedule.cost * 1.01 if schedule.cost > 0 else 1)
    ax.set_ylim(0, schedule.p)
    ax.set_xlabel("time (s)")
    ax.set_ylabel("processors")
    ax.set_title(title or f"{schedule.algo}: {len(schedule.packs)} packs, cost {schedule.cost:.4g} s")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
