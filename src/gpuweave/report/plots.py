"""Matplotlib PNGs for one or several run directories (Agg canvas, no pyplot state).

Every function takes loaded, labelled runs (:func:`gpuweave.report.rundir.load_runs`) and a path, draws
one figure and returns the path of the PNG it wrote. Times are shown in hours of simulated time.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from gpuweave.report.rundir import RunData

#: above this many runs the busy-GPU plot draws one panel per GPU model instead of one per run
SMALL_MULTIPLES_MAX_RUNS = 12


def _figure(nrows: int = 1, ncols: int = 1, *, width: float = 7.0, height: float = 4.0, **kw):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False, **kw)
    return fig, axes


def _save(fig, path: Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="png", dpi=100, metadata={"Software": None})
    return path


def plot_text(text: str) -> str:
    """Make user text safe for matplotlib: no mathtext (``$``) and no legend-hiding leading ``_``."""
    text = str(text).replace("$", r"\$")
    return " " + text if text.startswith("_") else text


def _colors(n: int) -> list:
    import matplotlib

    if n <= 10:
        cmap = matplotlib.colormaps["tab10"]
        return [cmap(i) for i in range(n)]
    if n <= 20:
        # tab20 pairs a dark and a light shade of each hue; take all dark shades first so neighbours differ.
        cmap = matplotlib.colormaps["tab20"]
        order = list(range(0, 20, 2)) + list(range(1, 20, 2))
        return [cmap(order[i]) for i in range(n)]
    cmap = matplotlib.colormaps["viridis"]
    return [cmap(i / max(n - 1, 1)) for i in range(n)]


def _legend(ax, n: int) -> None:
    if n == 0:
        return
    ax.legend(fontsize="small" if n <= 6 else "x-small", ncol=1 if n <= 8 else 2, frameon=False)


def _hours(values) -> np.ndarray:
    return np.asarray(values, dtype=float) / 3600.0


def plot_jct_cdf(runs: Sequence[RunData], path: Path) -> Path:
    """Empirical CDF of job completion time over completed jobs, one line per run."""
    fig, axes = _figure()
    ax = axes[0, 0]
    all_jct = []
    for run, color in zip(runs, _colors(len(runs))):
        jct = run.jobs["jct"].to_numpy(dtype=float)
        jct = np.sort(jct[np.isfinite(jct)]) / 3600.0
        label = plot_text(run.label)
        if jct.size == 0:
            ax.plot([], [], color=color, label=f"{label} (no completed jobs)")
            continue
        all_jct.append(jct)
        y = np.arange(1, jct.size + 1) / jct.size
        ax.step(np.concatenate([[jct[0]], jct]), np.concatenate([[0.0], y]), where="post", color=color, label=label)
    if all_jct:
        lo = min(float(a[0]) for a in all_jct)
        hi = max(float(a[-1]) for a in all_jct)
        if lo > 0 and hi / lo > 100:
            ax.set_xscale("log")
    ax.set_xlabel("job completion time (h)")
    ax.set_ylabel("fraction of completed jobs")
    ax.set_ylim(0, 1.02)
    ax.set_title("JCT CDF")
    ax.grid(True, alpha=0.3)
    _legend(ax, len(runs))
    return _save(fig, path)


def plot_completed_over_time(runs: Sequence[RunData], path: Path) -> Path:
    """Cumulative number of completed jobs over simulated time, one line per run."""
    fig, axes = _figure()
    ax = axes[0, 0]
    for run, color in zip(runs, _colors(len(runs))):
        ends = run.jobs["end"].to_numpy(dtype=float)
        ends = np.sort(ends[np.isfinite(ends)])
        arrivals = run.jobs["arrival"].to_numpy(dtype=float)
        arrivals = arrivals[np.isfinite(arrivals)]
        t0 = float(arrivals.min()) if arrivals.size else (float(ends[0]) if ends.size else 0.0)
        x = _hours(np.concatenate([[t0], ends]))
        y = np.arange(0, ends.size + 1)
        ax.step(x, y, where="post", color=color, label=plot_text(run.label))
    ax.set_xlabel("time (h)")
    ax.set_ylabel("completed jobs")
    ax.set_title("Completed jobs over time")
    ax.grid(True, alpha=0.3)
    _legend(ax, len(runs))
    return _save(fig, path)


def _step_series(run: RunData, column: str) -> tuple[np.ndarray, np.ndarray]:
    ts = run.timeseries
    return _hours(ts["time"]), ts[column].to_numpy(dtype=float)


def plot_busy_gpus(runs: Sequence[RunData], path: Path) -> Path:
    """Busy GPUs over time by model (step plot).

    One run: one panel with a line per model and the total. Up to :data:`SMALL_MULTIPLES_MAX_RUNS` runs: a
    small multiple per run. More runs: a small multiple per GPU model with a line per run.
    """
    models: list[str] = []
    for run in runs:
        models += [m for m in run.models if m not in models]
    model_colors = dict(zip(models, _colors(len(models))))
    if len(runs) <= SMALL_MULTIPLES_MAX_RUNS:
        n = len(runs)
        ncols = 1 if n == 1 else min(3, n)
        nrows = math.ceil(n / ncols)
        fig, axes = _figure(
            nrows,
            ncols,
            width=7.0 if n == 1 else 4.0 * ncols,
            height=4.0 if n == 1 else 2.8 * nrows,
            sharex=False,
            sharey=True,
        )
        for i, run in enumerate(runs):
            ax = axes[i // ncols, i % ncols]
            for m in run.models:
                x, y = _step_series(run, f"busy_{m}")
                ax.step(x, y, where="post", color=model_colors[m], label=plot_text(m))
            x, y = _step_series(run, "busy_total")
            ax.step(x, y, where="post", color="black", linestyle="--", linewidth=0.8, label="total")
            ax.set_title(plot_text(run.label), fontsize="medium")
            ax.grid(True, alpha=0.3)
            if i % ncols == 0:
                ax.set_ylabel("busy GPUs")
            if i // ncols == nrows - 1:
                ax.set_xlabel("time (h)")
            if i == 0:
                _legend(ax, len(run.models) + 1)
        for j in range(n, nrows * ncols):
            axes[j // ncols, j % ncols].set_visible(False)
    else:
        panels = models + ["total"]
        ncols = min(3, len(panels))
        nrows = math.ceil(len(panels) / ncols)
        fig, axes = _figure(nrows, ncols, width=4.0 * ncols, height=2.8 * nrows)
        run_colors = _colors(len(runs))
        for i, model in enumerate(panels):
            ax = axes[i // ncols, i % ncols]
            column = "busy_total" if model == "total" else f"busy_{model}"
            for run, color in zip(runs, run_colors):
                if column in run.timeseries.columns:
                    x, y = _step_series(run, column)
                    ax.step(x, y, where="post", color=color, linewidth=0.8, label=plot_text(run.label))
            ax.set_title(plot_text(model), fontsize="medium")
            ax.set_xlabel("time (h)")
            ax.set_ylabel("busy GPUs")
            ax.grid(True, alpha=0.3)
            if i == 0:
                _legend(ax, len(runs))
        for j in range(len(panels), nrows * ncols):
            axes[j // ncols, j % ncols].set_visible(False)
    fig.suptitle("Busy GPUs over time")
    return _save(fig, path)


def plot_power(runs: Sequence[RunData], path: Path) -> Path:
    """Cluster power draw over time (kW, step plot), one line per run."""
    fig, axes = _figure()
    ax = axes[0, 0]
    for run, color in zip(runs, _colors(len(runs))):
        x, y = _step_series(run, "power_w")
        ax.step(x, y / 1000.0, where="post", color=color, label=plot_text(run.label))
    ax.set_xlabel("time (h)")
    ax.set_ylabel("power (kW)")
    ax.set_title("Power over time")
    ax.grid(True, alpha=0.3)
    _legend(ax, len(runs))
    return _save(fig, path)


GRU_ROUND_S = 360.0


def gru_per_round(run: RunData, round_length: float = GRU_ROUND_S) -> tuple[np.ndarray, np.ndarray]:
    """(GPU utilisation per round of ``round_length`` s, round lengths) from first arrival to the last
    completion: busy GPU-seconds / (cluster GPUs x round length), the last round partial (Hadar's GRU,
    spec hadar.md §5.6, from a run directory's timeseries)."""
    from gpuweave.cluster.metrics import step_mean_per_interval

    ts = run.timeseries
    total = float((run.summary.get("cluster") or {}).get("total_gpus") or 0) or float(ts["busy_total"].max() or 1)
    t0 = float(run.jobs["arrival"].min())
    ends = run.jobs["end"].to_numpy(dtype=float)
    end = float(np.nanmax(ends)) if np.isfinite(ends).any() else float(ts["time"].max())
    n = max(1, math.ceil((end - t0) / round_length - 1e-9))
    edges = np.minimum(t0 + np.arange(n + 1) * round_length, end)
    busy = step_mean_per_interval(ts["time"].to_numpy(dtype=float), ts["busy_total"].to_numpy(dtype=float), edges)
    return busy / total, np.diff(edges)


def plot_gru_cdf(runs: Sequence[RunData], path: Path, round_length: float = GRU_ROUND_S) -> Path:
    """CDF over time of the GPU utilisation per round (Hadar's Fig. 3 style), one line per run."""
    fig, axes = _figure()
    ax = axes[0, 0]
    for run, color in zip(runs, _colors(len(runs))):
        gru, w = gru_per_round(run, round_length)
        order = np.argsort(gru, kind="stable")
        if w.sum() > 0:
            ax.step(
                100 * gru[order], np.cumsum(w[order]) / w.sum(), where="post", color=color, label=plot_text(run.label)
            )
    ax.set_xlabel(f"GPU utilisation per {round_length:g} s round (%)")
    ax.set_ylabel("fraction of time")
    ax.set_title("GPU resource utilisation (GRU) CDF")
    ax.grid(True, alpha=0.3)
    _legend(ax, len(runs))
    return _save(fig, path)


def plot_runs(runs: Sequence[RunData], out_dir: Path) -> list[tuple[str, Path]]:
    """All run plots into ``out_dir``: ``[(caption, png_path), ...]``."""
    out_dir = Path(out_dir)
    return [
        ("Job completion time CDF", plot_jct_cdf(runs, out_dir / "jct_cdf.png")),
        ("Completed jobs over time", plot_completed_over_time(runs, out_dir / "completed_jobs.png")),
        ("Busy GPUs over time by model", plot_busy_gpus(runs, out_dir / "busy_gpus.png")),
        ("GPU utilisation per 360 s round, CDF over time (GRU)", plot_gru_cdf(runs, out_dir / "gru_cdf.png")),
        ("Power over time", plot_power(runs, out_dir / "power.png")),
    ]


def plot_sweep_aggregate(
    df: Any,
    path: Path,
    *,
    x: str | None,
    y: str = "avg_jct_s",
    groups: Sequence[str] = ("policy",),
) -> Path:
    """Mean of ``y`` (over seeds and any other field not in ``groups``) against ``x``, one line per group.

    ``df`` is a pandas DataFrame of sweep rows. With ``x=None`` draws bars, one per group. The error bars
    are the standard deviation across the averaged rows.
    """
    fig, axes = _figure()
    ax = axes[0, 0]
    groups = [g for g in groups if g in df.columns and g != x]
    data = df[np.isfinite(df[y].to_numpy(dtype=float))]
    ylabel = f"mean {y}"
    scale = 1.0
    if y.endswith("_s"):
        scale, ylabel = 3600.0, f"mean {y[:-2]} (h)"
    # a grid value of null (the field's default) reads "null", as in SWEEP.yaml; str() of a missing value would be
    # a float NaN under pandas' string dtype, which " ".join refuses
    labels = data[groups].astype(object).where(data[groups].notna(), "null").map(str) if groups else None
    keyed = data.assign(_group=labels.agg(" ".join, axis=1) if groups else "all")
    names = list(dict.fromkeys(keyed["_group"]))
    colors = _colors(len(names))
    if x is None:
        means = [keyed.loc[keyed["_group"] == g, y].mean() / scale for g in names]
        stds = [keyed.loc[keyed["_group"] == g, y].std(ddof=0) / scale for g in names]
        ax.bar(range(len(names)), means, yerr=stds, color=colors, capsize=3)
        ax.set_xticks(range(len(names)), [plot_text(n) for n in names], rotation=30, ha="right")
    else:
        for name, color in zip(names, colors):
            part = keyed[keyed["_group"] == name]
            stats = part.groupby(x, sort=True)[y].agg(["mean", "std", "count"])
            std = stats["std"].fillna(0.0).to_numpy() / scale
            ax.errorbar(
                stats.index.to_numpy(dtype=float),
                stats["mean"].to_numpy() / scale,
                yerr=std,
                marker="o",
                capsize=3,
                color=color,
                label=plot_text(name),
            )
        ax.set_xlabel(plot_text(x))
        _legend(ax, len(names))
    ax.set_ylabel(plot_text(ylabel))
    ax.set_title(plot_text(f"{ylabel} per " + (" + ".join(groups) if groups else "sweep")))
    ax.grid(True, alpha=0.3)
    return _save(fig, path)
