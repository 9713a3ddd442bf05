"""Kernel timelines as PNG (Fig. 8 / Fig. 12 style): one row per service, kernels coloured by priority,
fillers hatched. Matplotlib (Agg) is imported inside the function. Complexity O(kernels drawn)."""

from __future__ import annotations

from pathlib import Path

from gpuweave.kernel.sim import KernelRecord

PRIORITY_COLOURS = [
    "#d62728",
    "#1f77b4",
    "#2ca02c",
    "#9467bd",
    "#ff7f0e",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
]


def plot_timelines(
    panels: list[tuple[str, list[KernelRecord]]],
    window: tuple[float, float],
    path: str | Path,
    services: list[str] | None = None,
) -> Path:
    """Draw one panel per ``(title, kernels)`` over ``window`` (ms) into ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    t0, t1 = window
    names = services or sorted({k.service for _, ks in panels for k in ks})
    fig, axes = plt.subplots(len(panels), 1, figsize=(10, 1.1 + 0.9 * len(names) * len(panels)), squeeze=False)
    prios: set[int] = set()
    for ax, (title, kernels) in zip(axes[:, 0], panels):
        for k in kernels:
            if k.end < t0 or k.start > t1 or k.service not in names:
                continue
            y = names.index(k.service)
            prios.add(k.priority)
            ax.broken_barh(
                [(k.start, k.end - k.start)],
                (y - 0.35, 0.7),
                facecolors=PRIORITY_COLOURS[k.priority % 10],
                edgecolor="black",
                linewidth=0.3,
                hatch="//" if k.filler else None,
            )
        ax.set_xlim(t0, t1)
        ax.set_yticks(range(len(names)))
        ax.set_yticklabels(names)
        ax.set_ylim(-0.6, len(names) - 0.4)
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("time (ms)")
    handles = [Patch(facecolor=PRIORITY_COLOURS[p], label=f"priority {p}") for p in sorted(prios)]
    handles.append(Patch(facecolor="white", edgecolor="black", hatch="//", label="gap filler"))
    fig.legend(handles=handles, loc="upper right", fontsize=8)
    fig.tight_layout()
    out = Path(path)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out
