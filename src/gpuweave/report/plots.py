"""The plots of cluster runs, drawn from the run directories' CSV files only, in the house style.

Every function takes loaded, labelled runs (:func:`gpuweave.report.rundir.load_runs`) and a PNG path, draws one
figure, writes the data it drew to a CSV beside the PNG and returns a :class:`~gpuweave.report.section.Figure`
whose caption says what to look at (with the numbers that matter). :func:`plot_runs` first merges runs whose
results are identical into one labelled ``a = b = c`` (:func:`merge_identical`), so no line hides another, and
clips the time axes of the time-series plots at :func:`activity_horizon` with a note when a few stragglers
would otherwise squeeze the interesting part into a corner. Times are simulated time, each time axis in the unit
the magnitude of what it shows calls for (seconds, minutes, hours or days: :func:`gpuweave.units.axis_unit`, the
unit the report's tables and sentences use for the same durations), named in the axis label and in the CSV's
column (``jct_h``, ``time_min``). Shared runs (tasks holding shares of GPUs) add one figure, the share held and FGD's
fragmentation ratio over time (:func:`plot_sharing`); a report of whole-GPU runs has none. Runs in which a job
changed its GPU count (elastic jobs: Optimus) add each job's GPUs over time (:func:`plot_job_gpus`).
Complexity: O(rows of the runs' CSV files) plus matplotlib's drawing.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from gpuweave.plotting import (
    CONTEXT_GREY,
    LINESTYLES,
    PALETTE,
    figure,
    fill_style,
    group_identical,
    legend_below,
    legend_outside,
    note,
    plot_text,
    plot_title,
    save,
    series_style,
    write_csv,
)
from gpuweave.report.rundir import LABEL_MAX, SHARING_REQUIRED, RunData, _short, config_part, job_gpu_segments
from gpuweave.report.section import Figure
from gpuweave.units import Unit, axis_unit, duration_text, time_metric_unit

#: up to this many runs the busy-GPU plot draws one panel per run; above, one panel per GPU model
SMALL_MULTIPLES_MAX_RUNS = 16
#: the power plot draws one panel per run (the others in grey behind it) above this many runs
POWER_SINGLE_PANEL_MAX_RUNS = 4
#: candidate lengths (s) of the rounds the power plot averages over: the shortest giving at most POWER_ROUNDS
POWER_ROUND_CHOICES = (360, 900, 1800, 3600, 7200, 14400, 21600, 43200, 86400)
POWER_ROUNDS = 150
#: the time axes stop where this share of every run's jobs is done (times 1.1), unless that cuts off little
HORIZON_QUANTILE = 0.95
GRU_ROUND_S = 360.0
GRU_MAX_ROUNDS = 1_000_000  # 11 years of 360 s rounds; a 10^6-job trace at 30 jobs/h spans about 330,000


def _in(values, unit: Unit) -> np.ndarray:
    """Seconds as a float array in ``unit``."""
    return np.asarray(values, dtype=float) / unit.seconds


def _time_label(what: str, unit: Unit, extra: str = "") -> str:
    """An axis label with its unit: "time since the first arrival (h)", "job completion time (min, log scale)"."""
    return f"{what} ({unit.symbol}{extra})"


def merge_identical(runs: Sequence[RunData]) -> list[RunData]:
    """One run per set of runs with identical jobs.csv and timeseries.csv numbers (and sharing.csv numbers, or
    none), labelled ``a = b = c``."""
    keys = []
    for run in runs:
        jobs = tuple(run.jobs[c].to_numpy(dtype=float) for c in ("arrival", "end", "jct") if c in run.jobs)
        series = tuple(run.timeseries[c].to_numpy(dtype=float) for c in run.timeseries.columns)
        # two shared runs alike in jobs and busy GPUs may still differ in what they hold and fragment
        shares = None if run.sharing is None else tuple(run.sharing[c].to_numpy(dtype=float) for c in SHARING_REQUIRED)
        keys.append((jobs, series, tuple(run.timeseries.columns), shares))
    groups = group_identical([run.label for run in runs], keys)
    return [dataclasses.replace(runs[members[0]], label=label) for label, members in groups]


def _merged_sentence(runs: Sequence[RunData]) -> str:
    merged = [run.label for run in runs if " = " in run.label]
    if not merged:
        return ""
    return " Runs with identical results share one line: " + "; ".join(merged) + "."


def _finite_sorted(values) -> np.ndarray:
    a = np.asarray(values, dtype=float)
    return np.sort(a[np.isfinite(a)])


def activity_horizon(runs: Sequence[RunData]) -> tuple[float, float]:
    """(where the time axes stop, when the last job ends) in seconds since the first arrival.

    The axes stop at 1.1 x the latest time by which :data:`HORIZON_QUANTILE` of some run's jobs are done, unless
    that would cut off less than a quarter of the whole span (then the whole span is shown)."""
    t0 = _start(runs)
    quantiles, last = [], 0.0
    for run in runs:
        ends = _finite_sorted(run.jobs["end"])
        if ends.size:
            quantiles.append(float(np.quantile(ends, HORIZON_QUANTILE)))
            last = max(last, float(ends[-1]))
        last = max(last, float(run.timeseries["time"].max()))
    end = last - t0
    clip = 1.1 * (max(quantiles) - t0) if quantiles else end
    return (end, end) if clip >= 0.75 * end or clip <= 0 else (clip, end)


def _start(runs: Sequence[RunData]) -> float:
    arrivals = np.concatenate([_finite_sorted(run.jobs["arrival"]) for run in runs] or [np.zeros(0)])
    return float(arrivals.min()) if arrivals.size else 0.0


def _clip_sentence(runs: Sequence[RunData], clip: float, end: float) -> str:
    if clip >= end:
        return ""
    late = []
    for run in runs:
        ends = _finite_sorted(run.jobs["end"]) - _start(runs)
        if ends.size and ends[-1] > clip:
            late.append((float(ends[-1]), int((ends > clip).sum()), run.label))
    if not late:  # the axis stops before the end of some run's time series, not before a completion
        return (
            f" The time axis stops at {duration_text(clip)}, where {HORIZON_QUANTILE:.0%} of every run's jobs are done;"
            f" no completion is later, but the runs' records go on until {duration_text(end)}."
        )
    late.sort(reverse=True)
    last = late[0]
    return (
        f" The time axis stops at {duration_text(clip)}, where {HORIZON_QUANTILE:.0%} of every run's jobs are done;"
        f" {sum(n for _, n, _ in late)} later completions are off the plot,"
        f" the last at {duration_text(last[0])} ({last[2]})."
    )


def _median_unit(seconds: np.ndarray) -> Unit:
    """:func:`axis_unit` of many durations (their median found by numpy: a run may have a million jobs)."""
    nonzero = np.abs(seconds[np.isfinite(seconds) & (seconds != 0)])
    return axis_unit([float(np.median(nonzero))] if nonzero.size else [])


def _time_unit(clip: float) -> Unit:
    """The unit of a time axis that runs from the first arrival to ``clip`` seconds after it."""
    return axis_unit([clip])


def _clip_note(ax, clip: float, end: float, unit: Unit, *, panel: bool = True) -> None:
    """Clip the time axis (in ``unit``) at ``clip`` seconds; one panel says so in its corner (small multiples say
    it in the title)."""
    if clip < end:
        ax.set_xlim(0, clip / unit.seconds)
        if panel:
            note(ax, _clip_text(clip, end))


def _clip_text(clip: float, end: float) -> str:
    return f"time axis clipped at {duration_text(clip)}; runs last until {duration_text(end)}" if clip < end else ""


def _suptitle(fig, title: str, clip: float, end: float) -> None:
    fig.suptitle(plot_title(title + (f" ({_clip_text(clip, end)})" if clip < end else "")))


def _cdf_xy(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    y = np.arange(1, values.size + 1) / values.size
    return np.concatenate([[values[0]], values]), np.concatenate([[0.0], y])


def plot_jct_cdf(runs: Sequence[RunData], path: Path) -> Figure:
    """Empirical CDF of job completion time over completed jobs, one line per run (log time when it spans
    more than two orders of magnitude)."""
    fig, axes = figure(height=4.6)
    ax = axes[0, 0]
    rows, medians = [], []
    jcts = [_finite_sorted(run.jobs["jct"]) for run in runs]  # seconds
    log = (
        any(jct.size for jct in jcts)
        and min(jct[0] for jct in jcts if jct.size) > 0
        # a product, not a ratio: a tiny shortest JCT (1e-320 s) would overflow the division
        and max(jct[-1] for jct in jcts if jct.size) > 100 * min(jct[0] for jct in jcts if jct.size)
    )
    unit = _median_unit(np.concatenate(jcts) if jcts else np.zeros(0))
    for i, (run, seconds) in enumerate(zip(runs, jcts)):
        if seconds.size == 0:
            ax.plot([], [], label=plot_text(f"{run.label} (no completed jobs)"), **series_style(i))
            continue
        jct = _in(seconds, unit)
        medians.append((float(np.median(seconds)), run.label))
        x, y = _cdf_xy(jct)
        ax.step(x, y, where="post", label=plot_text(run.label), linewidth=1.4, **series_style(i))
        rows += [(run.label, a, b) for a, b in zip(x[1:], y[1:])]
    if log:
        ax.set_xscale("log")
    ax.set_xlabel(_time_label("job completion time", unit, ", log scale" if log else ""))
    ax.set_ylabel("fraction of completed jobs")
    ax.set_ylim(0, 1.02)
    ax.set_title("Job completion time CDF")
    legend_outside(ax, len(runs))
    csv = write_csv(path.with_suffix(".csv"), ("series", f"jct_{unit.symbol}", "fraction_of_completed_jobs"), rows)
    caption = "Job completion time (JCT) CDF over the completed jobs of each run" + (
        ", on a log time axis." if log else "."
    )
    if medians:
        best, worst = min(medians), max(medians)
        caption += (
            f" Further left is better: half the jobs of {best[1]} finish within {duration_text(best[0])}, "
            f"those of {worst[1]} within {duration_text(worst[0])}."
        )
    return Figure(save(fig, path), caption + _merged_sentence(runs), csv)


def plot_completed_over_time(runs: Sequence[RunData], path: Path) -> Figure:
    """Cumulative number of completed jobs over time since the first arrival, one line per run."""
    fig, axes = figure(height=4.6)
    ax = axes[0, 0]
    t0 = _start(runs)
    clip, end = activity_horizon(runs)
    unit = _time_unit(clip)
    rows, halves = [], []
    for i, run in enumerate(runs):
        ends = _finite_sorted(run.jobs["end"]) - t0
        x = np.concatenate([[0.0], _in(ends, unit)])
        y = np.arange(0, ends.size + 1)
        ax.step(x, y, where="post", label=plot_text(run.label), linewidth=1.4, **series_style(i))
        rows += [(run.label, a, b) for a, b in zip(x, y)]
        half = math.ceil(len(run.jobs) / 2)
        if ends.size >= half > 0:
            halves.append((float(ends[half - 1]), run.label))
    _clip_note(ax, clip, end, unit)
    ax.set_xlabel(_time_label("time since the first arrival", unit))
    ax.set_ylabel("completed jobs")
    ax.set_title("Completed jobs over time")
    legend_outside(ax, len(runs))
    csv = write_csv(path.with_suffix(".csv"), ("series", f"time_{unit.symbol}", "completed_jobs"), rows)
    caption = "Completed jobs over time since the first arrival."
    if halves:
        best, worst = min(halves), max(halves)
        caption += (
            f" Higher and earlier is better: {best[1]} has completed half of its jobs after "
            f"{duration_text(best[0])}, {worst[1]} after {duration_text(worst[0])}."
        )
    return Figure(save(fig, path), caption + _clip_sentence(runs, clip, end) + _merged_sentence(runs), csv)


def _step_series(run: RunData, column: str, t0: float, unit: Unit) -> tuple[np.ndarray, np.ndarray]:
    """(times since ``t0`` in ``unit``, the column's values) of the run's step series."""
    ts = run.timeseries
    return _in(ts["time"] - t0, unit), ts[column].to_numpy(dtype=float)


def _models(runs: Sequence[RunData]) -> list[str]:
    models: list[str] = []
    for run in runs:
        models += [m for m in run.models if m not in models]
    return models


def _grid(n: int, max_cols: int = 4) -> tuple[int, int]:
    ncols = 1 if n == 1 else min(max_cols, n if n <= 4 else max(3, math.ceil(math.sqrt(n))))
    return math.ceil(n / ncols), ncols


def plot_busy_gpus(runs: Sequence[RunData], path: Path) -> Figure:
    """Busy GPUs over time by model: one panel per run, models stacked, all panels on shared axes (up to
    :data:`SMALL_MULTIPLES_MAX_RUNS` runs); for more runs one panel per GPU model with a line per run."""
    t0 = _start(runs)
    clip, end = activity_horizon(runs)
    unit = _time_unit(clip)
    models = _models(runs)
    rows: list[tuple[Any, ...]] = []
    if len(runs) <= SMALL_MULTIPLES_MAX_RUNS:
        fig = _busy_per_run(runs, models, t0, clip, end, unit, rows)
        what = f"one panel per run, GPUs of each model stacked ({', '.join(models)} from the bottom)"
    else:
        fig = _busy_per_model(runs, models, t0, clip, end, unit, rows)
        what = "one panel per GPU model and for the total, one line per run"
    _suptitle(fig, "Busy GPUs over time", clip, end)
    csv = write_csv(path.with_suffix(".csv"), ("series", f"time_{unit.symbol}", "model", "busy_gpus"), rows)
    busiest = max(runs, key=lambda r: float(r.metrics.get("utilization") or 0.0))
    caption = (
        f"Busy GPUs over time since the first arrival: {what}; every panel has the same axes. "
        f"A panel filled to the top is a fully busy cluster, a long thin tail is a few jobs holding few GPUs; "
        f"the highest utilisation is {busiest.label}'s ({float(busiest.metrics.get('utilization') or 0):.0%})."
    )
    return Figure(save(fig, path), caption + _clip_sentence(runs, clip, end) + _merged_sentence(runs), csv)


def _busy_per_run(runs, models, t0, clip, end, unit, rows) -> Any:
    from matplotlib.patches import Patch

    nrows, ncols = _grid(len(runs))
    fig, axes = figure(nrows, ncols, height=1.0 + 1.9 * nrows if len(runs) > 1 else 4.2, sharex=True, sharey=True)
    for i, run in enumerate(runs):
        ax = axes[i // ncols, i % ncols]
        x, _ = _step_series(run, "busy_total", t0, unit)
        bottom = np.zeros_like(x)
        for k, m in enumerate(models):
            if f"busy_{m}" not in run.timeseries.columns:
                continue
            _, y = _step_series(run, f"busy_{m}", t0, unit)
            ax.fill_between(x, bottom, bottom + y, step="post", linewidth=0, color=fill_style(k)["facecolor"])
            rows += [(run.label, a, m, b) for a, b in zip(x, y)]
            bottom = bottom + y
        ax.set_title(plot_text(run.label), fontsize="small")
        _clip_note(ax, clip, end, unit, panel=False) if i == 0 else None
        if i % ncols == 0:
            ax.set_ylabel("busy GPUs", fontsize="small")
        if i // ncols == nrows - 1 or i + ncols >= len(runs):
            ax.set_xlabel(_time_label("time", unit), fontsize="small")
            ax.xaxis.set_tick_params(labelbottom=True)
    for j in range(len(runs), nrows * ncols):
        axes[j // ncols, j % ncols].set_visible(False)
    handles = [Patch(color=fill_style(k)["facecolor"], label=plot_text(m)) for k, m in enumerate(models)]
    legend_below(fig, handles, title="GPU model")
    return fig


def _busy_per_model(runs, models, t0, clip, end, unit, rows) -> Any:
    panels = models + ["total"]
    nrows, ncols = _grid(len(panels), 3)
    fig, axes = figure(nrows, ncols, height=1.2 + 2.4 * nrows, sharex=True)
    for p, model in enumerate(panels):
        ax = axes[p // ncols, p % ncols]
        column = "busy_total" if model == "total" else f"busy_{model}"
        for i, run in enumerate(runs):
            if column in run.timeseries.columns:
                x, y = _step_series(run, column, t0, unit)
                ax.step(x, y, where="post", linewidth=0.9, label=plot_text(run.label), **series_style(i))
                rows += [(run.label, a, model, b) for a, b in zip(x, y)]
        ax.set_title(plot_text(model), fontsize="small")
        ax.set_xlabel(_time_label("time", unit), fontsize="small")
        ax.set_ylabel("busy GPUs", fontsize="small")
        _clip_note(ax, clip, end, unit, panel=False) if p == 0 else None
    for j in range(len(panels), nrows * ncols):
        axes[j // ncols, j % ncols].set_visible(False)
    legend_below(fig, axes[0, 0].get_legend_handles_labels()[0], ncol=4)
    return fig


def power_round_length(span_s: float) -> int:
    """The shortest of :data:`POWER_ROUND_CHOICES` that splits ``span_s`` into at most :data:`POWER_ROUNDS`; for a
    span longer than that many days, a whole number of days that does, so the rounds stay few however long the run
    (a span of 10^15 s would otherwise be 10^10 one-day rounds)."""
    for length in POWER_ROUND_CHOICES:
        if span_s / length <= POWER_ROUNDS:
            return length
    day = POWER_ROUND_CHOICES[-1]
    return day * max(1, math.ceil(span_s / day / POWER_ROUNDS))


def power_per_round(run: RunData, t0: float, end_s: float, round_s: float) -> tuple[np.ndarray, np.ndarray]:
    """(round starts in s since ``t0``, mean power in W over each round) of the run's step series."""
    # imported here: importing gpuweave.report.plots does without pydantic
    from gpuweave.cluster.metrics import step_mean_per_interval

    ts = run.timeseries
    t = ts["time"].to_numpy(dtype=float)
    level = ts["power_w"].to_numpy(dtype=float)
    last = float(t.max()) if t.size else t0
    # Up to end_s (where the plot's time axis stops) only: the round length was chosen for that span, and a record
    # far beyond it would otherwise ask for millions of rounds.
    edges = np.arange(t0, max(min(last, end_s), t0) + round_s, round_s)
    edges = edges[edges <= end_s + round_s]
    if edges.size < 2:
        edges = np.array([t0, t0 + round_s])
    mean = step_mean_per_interval(t, level, edges)
    keep = edges[:-1] < last  # nothing after the run's last breakpoint: the cluster is off
    return edges[:-1][keep] - t0, mean[keep]


def plot_power(runs: Sequence[RunData], path: Path) -> Figure:
    """Cluster power draw (kW), the mean per round (the round length chosen for the span); one panel per run
    with the others in grey behind it when there are more than :data:`POWER_SINGLE_PANEL_MAX_RUNS` runs.
    The CSV has the raw step series beside the round means."""
    t0 = _start(runs)
    clip, end = activity_horizon(runs)
    unit = _time_unit(clip)
    round_s = power_round_length(clip)
    smoothed = [power_per_round(run, t0, t0 + clip, round_s) for run in runs]
    rows: list[tuple[Any, ...]] = []
    for run, (x, y) in zip(runs, smoothed):
        raw_x, raw_y = _step_series(run, "power_w", t0, unit)
        rows += [(run.label, "raw", a, b / 1000.0) for a, b in zip(raw_x, raw_y)]
        rows += [(run.label, f"mean per {round_s} s round", a, b / 1000.0) for a, b in zip(_in(x, unit), y)]
    single = len(runs) <= POWER_SINGLE_PANEL_MAX_RUNS
    nrows, ncols = (1, 1) if single else _grid(len(runs))
    fig, axes = figure(nrows, ncols, height=4.4 if single else 1.0 + 1.9 * nrows, sharex=True, sharey=True)
    for i, run in enumerate(runs):
        ax = axes[0, 0] if single else axes[i // ncols, i % ncols]
        if not single:
            for j, (x, y) in enumerate(smoothed):
                if j != i:
                    ax.step(_in(x, unit), y / 1000.0, where="post", color=CONTEXT_GREY, linewidth=0.8)
            ax.set_title(plot_text(run.label), fontsize="small")
        x, y = smoothed[i]
        ax.step(_in(x, unit), y / 1000.0, where="post", linewidth=1.4, label=plot_text(run.label), **series_style(i))
    for j in range(len(runs), nrows * ncols):
        axes[j // ncols, j % ncols].set_visible(False)
    for k, ax in enumerate(axes.flat[: len(runs)]):
        if k % ncols == 0:
            ax.set_ylabel("power (kW)", fontsize="small")
        if k + ncols >= len(runs):
            ax.set_xlabel(_time_label("time", unit), fontsize="small")
            ax.xaxis.set_tick_params(labelbottom=True)
    _clip_note(axes[0, 0], clip, end, unit, panel=single)
    _suptitle(fig, f"Cluster power, mean per {duration_text(round_s)} round", clip, end)
    if single:
        legend_outside(axes[0, 0], len(runs))
    csv = write_csv(path.with_suffix(".csv"), ("series", "kind", f"time_{unit.symbol}", "power_kw"), rows)
    energy = [(float(r.metrics["energy_kwh"]), r.label) for r in runs if _number(r.metrics.get("energy_kwh"))]
    caption = (
        f"Cluster power draw (idle and busy GPUs, times PUE), averaged over {duration_text(round_s)} rounds; "
        "the raw step series is in the CSV."
        + ("" if single else " Each panel shows one run in colour and the others in grey, on shared axes.")
    )
    if len(energy) > 1:
        low, high = min(energy), max(energy)
        caption += (
            f" Lower and shorter is better: {low[1]} used the least energy ({low[0]:,.0f} kWh), "
            f"{high[1]} the most ({high[0]:,.0f} kWh, {high[0] / low[0] - 1:.0%} more)."
        )
    return Figure(save(fig, path), caption + _clip_sentence(runs, clip, end) + _merged_sentence(runs), csv)


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0


def gru_rounds(run: RunData, round_length: float = GRU_ROUND_S) -> tuple[float, float, int]:
    """(first arrival, last completion or record, number of rounds) of :func:`gru_per_round`'s grid."""
    ts = run.timeseries
    t0 = float(run.jobs["arrival"].min())
    ends = run.jobs["end"].to_numpy(dtype=float)
    end = float(np.nanmax(ends)) if np.isfinite(ends).any() else float(ts["time"].max())
    return t0, end, max(1, math.ceil((end - t0) / round_length - 1e-9))


def gru_per_round(run: RunData, round_length: float = GRU_ROUND_S) -> tuple[np.ndarray, np.ndarray]:
    """(GPU utilisation per round of ``round_length`` s, round lengths) from first arrival to the last
    completion: busy GPU-seconds / (cluster GPUs x round length), the last round partial (Hadar's GRU,
    spec hadar.md §5.6, from a run directory's timeseries)."""
    # imported here: importing gpuweave.report.plots does without pydantic
    from gpuweave.cluster.metrics import step_mean_per_interval

    ts = run.timeseries
    total = float((run.summary.get("cluster") or {}).get("total_gpus") or 0) or float(ts["busy_total"].max() or 1)
    t0, end, n = gru_rounds(run, round_length)
    edges = np.minimum(t0 + np.arange(n + 1) * round_length, end)
    busy = step_mean_per_interval(ts["time"].to_numpy(dtype=float), ts["busy_total"].to_numpy(dtype=float), edges)
    return busy / total, np.diff(edges)


def plot_gru_cdf(runs: Sequence[RunData], path: Path, round_length: float = GRU_ROUND_S) -> Figure:
    """CDF over time of the GPU utilisation per round (Hadar's Fig. 3 style), one line per run."""
    fig, axes = figure(height=4.6)
    ax = axes[0, 0]
    rows, medians, too_long = [], [], []
    for i, run in enumerate(runs):
        rounds = gru_rounds(run, round_length)[2]
        if rounds > GRU_MAX_ROUNDS:  # arrays and CSV rows per round: a run of centuries would not fit in memory
            too_long.append(f"{run.label} ({rounds:,} rounds)")
            ax.plot([], [], label=plot_text(f"{run.label} (not drawn: {rounds:,} rounds)"), **series_style(i))
            continue
        gru, w = gru_per_round(run, round_length)
        order = np.argsort(gru, kind="stable")
        if w.sum() <= 0:
            continue
        x, y = 100 * gru[order], np.cumsum(w[order]) / w.sum()
        ax.step(x, y, where="post", label=plot_text(run.label), linewidth=1.4, **series_style(i))
        rows += [(run.label, a, b) for a, b in zip(x, y)]
        medians.append((float(x[np.searchsorted(y, 0.5)]), run.label))
    ax.set_xlabel(f"GPU utilisation per {round_length:g} s round (%)")
    ax.set_ylabel("fraction of time")
    ax.set_title("GPU resource utilisation (GRU) CDF")
    legend_outside(ax, len(runs))
    csv = write_csv(path.with_suffix(".csv"), ("series", "gru_pct", "fraction_of_time"), rows)
    caption = (
        f"CDF over time of the share of the cluster's GPUs busy in each {round_length:g} s round, from the first "
        "arrival to the last completion (Hadar's GRU, Fig. 3)."
    )
    if medians:
        best, worst = max(medians), min(medians)
        caption += (
            f" Further right is better: in half of its rounds {best[1]} keeps at least {best[0]:.0f}% of the GPUs "
            f"busy, {worst[1]} at least {worst[0]:.0f}%."
        )
    if too_long:
        caption += f" Not drawn, longer than {GRU_MAX_ROUNDS:,} rounds: {'; '.join(too_long)}."
    return Figure(save(fig, path), caption + _merged_sentence(runs), csv)


def _sharing_series(run: RunData, t0: float, unit: Unit) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(times since ``t0`` in ``unit``, % of the cluster's GPUs held, fragmentation ratio %) of a shared run's
    sharing.csv; the last row holds until the run's last record, so it is drawn to there."""
    df = run.sharing
    t = df["time_s"].to_numpy(dtype=float)
    held = df["used_milli_gpus"].to_numpy(dtype=float) / (10.0 * run.total_gpus)  # 1000 milli-GPUs = 100 %
    ratio = df["fragment_ratio_pct"].to_numpy(dtype=float)
    last = float(run.timeseries["time"].max())
    if last > t[-1]:
        t, held, ratio = np.append(t, last), np.append(held, held[-1]), np.append(ratio, ratio[-1])
    return _in(t - t0, unit), held, ratio


def _sharing_sentence(runs: Sequence[RunData]) -> str:
    """Which run holds the most of the GPUs on average and which fragments least, from the summaries' time-weighted
    means (``mean_gpu_allocation_pct``, ``mean_fragment_ratio_pct``); for one run, its own means."""
    held = _means(runs, "mean_gpu_allocation_pct")
    frag = _means(runs, "mean_fragment_ratio_pct")
    if len(runs) == 1:
        parts = [f"holds {held[0][0]:.1f}% of the GPUs on average"] if held else []
        parts += [f"its fragmentation ratio averages {frag[0][0]:.2f}%"] if frag else []
        return f" Time-weighted over the run, {runs[0].label} {' and '.join(parts)}." if parts else ""
    parts = (
        [_extremes(held, True, "holds the most of the GPUs on average", "", "the runs hold alike")]
        if len(held) > 1
        else []
    )
    parts += (
        [_extremes(frag, False, "fragments least", "a mean ratio of ", "the runs fragment alike")]
        if len(frag) > 1
        else []
    )
    return f" Time-weighted over each run, {'; '.join(parts)}." if parts else ""


def _means(runs: Sequence[RunData], metric: str) -> list[tuple[float, str]]:
    values = [(run.metrics.get(metric), run.label) for run in runs]
    return [(float(v), label) for v, label in values if isinstance(v, (int, float)) and math.isfinite(v)]


def _extremes(pairs: list[tuple[float, str]], high: bool, verb: str, lead: str, alike: str) -> str:
    """``best verb (lead x% against worst's y%)``, in as many decimals (1 to 3) as tell the two apart."""
    ordered = sorted(pairs, key=lambda p: -p[0] if high else p[0])
    (best, name), (worst, other) = ordered[0], ordered[-1]
    if round(best, 3) == round(worst, 3):
        return f"{alike} ({best:.1f}%)"
    digits = next(d for d in (1, 2, 3) if round(best, d) != round(worst, d))
    return f"{name} {verb} ({lead}{best:.{digits}f}% against {other}'s {worst:.{digits}f}%)"


def plot_sharing(runs: Sequence[RunData], path: Path) -> Figure:
    """Shared runs' GPU share held (% of the cluster's GPUs, fractions counted) above their fragmentation ratio
    (FGD's: % of the idle share the typical tasks could not use) over time, on one time axis, a step line per run
    with a sharing.csv; the others (whole-GPU runs) are left out and named in the caption. FGD judges a placement
    by both at once: holding more of the GPUs is worth little if it leaves the idle rest in fragments no task fits.
    At least one run must have a sharing table. O(rows of the sharing tables) plus matplotlib's drawing."""
    shared = [run for run in runs if run.sharing is not None]
    left_out = [run.label for run in runs if run.sharing is None]
    t0 = _start(shared)
    clip, end = activity_horizon(shared)
    unit = _time_unit(clip)
    fig, axes = figure(2, 1, height=6.2, sharex=True)
    top, bottom = axes[0, 0], axes[1, 0]
    rows: list[tuple[Any, ...]] = []
    peak = 100.0
    for i, run in enumerate(shared):
        x, held, ratio = _sharing_series(run, t0, unit)
        top.step(x, held, where="post", linewidth=1.2, label=plot_text(run.label), **series_style(i))
        bottom.step(x, ratio, where="post", linewidth=1.2, **series_style(i))
        rows += [(run.label, a, b, c) for a, b, c in zip(x, held, ratio)]
        peak = max(peak, float(held.max()))
    top.set_ylim(0, 1.03 * peak)
    bottom.set_ylim(bottom=0)
    top.set_ylabel("GPUs held (%)", fontsize="small")
    bottom.set_ylabel("fragmented (% of idle)", fontsize="small")
    bottom.set_xlabel(_time_label("time since the first arrival", unit), fontsize="small")
    _clip_note(top, clip, end, unit, panel=False)
    _suptitle(fig, "GPU share held and fragmentation over time", clip, end)
    legend_outside(top, len(shared))
    header = ("series", f"time_{unit.symbol}", "gpus_held_pct", "fragment_ratio_pct")
    csv = write_csv(path.with_suffix(".csv"), header, rows)
    caption = (
        "Share of the cluster's GPUs held by running tasks (fractional shares counted, top) and FGD's fragmentation "
        "ratio (the share of the idle GPU capacity the workload's typical tasks could not use, bottom) over time "
        "since the first arrival, one step line per shared run. Higher on top is more of the cluster at work; "
        "lower below is idle capacity the coming tasks can still use. Look where the lines part: a run holding less "
        "while its fragmentation is higher is losing GPUs to fragments." + _sharing_sentence(shared)
    )
    if left_out:
        caption += f" Left out, having no sharing.csv (whole-GPU runs): {'; '.join(left_out)}."
    return Figure(save(fig, path), caption + _clip_sentence(shared, clip, end) + _merged_sentence(shared), csv)


#: the per-job GPUs figure draws at most this many runs (one panel each), those with the most resized jobs
JOB_GPUS_MAX_RUNS = 4


def resized_runs(runs: Sequence[RunData]) -> list[tuple[RunData, list[tuple[str, float, float, int]]]]:
    """Runs in which some job held more than one GPU count over its life (elastic or moldable jobs), with their
    per-job stretches (:func:`~gpuweave.report.rundir.job_gpu_segments`)."""
    found = []
    for run in runs:
        segments = job_gpu_segments(run)
        if not segments:
            continue
        counts: dict[str, set[int]] = {}
        for job, _start, _end, gpus in segments:
            counts.setdefault(job, set()).add(gpus)
        if any(len(c) > 1 for c in counts.values()):
            found.append((run, segments))
    return found


JOB_BARS_NAMED = 40  # up to this many jobs a panel names each row
Stretches = list[tuple[str, float, float, int]]  # (job, start, end, value) of every stretch at a constant value


def job_bars(shown: Sequence[tuple[RunData, Stretches]], path: Path, value: str, title: str) -> tuple[Path, Path]:
    """Each job's ``value`` over time, one row per job (arrival order, first at the top), a bar for every stretch at
    a constant value coloured by it (a log scale past a ratio of 8: 1, 2 and 4 differ as 16, 32 and 64 do; and
    for a wide range, such as batch sizes), one panel per run. Returns the PNG and the CSV drawn. O(stretches)
    plus matplotlib's drawing."""
    from matplotlib import colormaps
    from matplotlib.cm import ScalarMappable
    from matplotlib.colors import BoundaryNorm, LogNorm
    from matplotlib.ticker import NullFormatter

    runs = [run for run, _ in shown]
    t0 = _start(runs)
    clip, end = activity_horizon(runs)
    unit = _time_unit(clip)
    values = [v for _, segs in shown for *_, v in segs]
    least, most = max(1, min(values)), max(values)
    if most > 8 * least or most - least > 32:  # (one colour per whole number only for a few of them)
        norm: Any = LogNorm(vmin=least, vmax=most)
        ticks = [2**k for k in range(int(math.log2(least)), int(math.log2(most)) + 1) if least <= 2**k <= most]
    else:
        norm = BoundaryNorm(np.arange(least - 0.5, most + 1.5), 256)
        ticks = list(range(least, most + 1, max(1, (most - least + 1) // 8)))
    cmap = colormaps["viridis"]
    fig, axes = figure(len(shown), 1, height=2.6 + 2.4 * len(shown), sharex=True)
    rows: list[tuple[Any, ...]] = []
    for i, (run, segments) in enumerate(shown):
        ax = axes[i, 0]
        order = {job: k for k, job in enumerate(run.jobs.sort_values(["arrival", "job_id"])["job_id"])}
        for job, start, stop, v in segments:
            y = order.get(job)
            if y is None:
                continue
            x0, x1 = (start - t0) / unit.seconds, (stop - t0) / unit.seconds
            ax.broken_barh([(x0, x1 - x0)], (y - 0.4, 0.8), facecolors=cmap(norm(v)), linewidth=0)
            rows.append((run.label, job, x0, x1, v))
        ax.set_ylim(len(order) - 0.5, -0.5)
        if len(order) <= JOB_BARS_NAMED:  # few jobs: each row named, at whole positions
            ax.set_yticks(range(len(order)), [plot_text(job) for job in order], fontsize="small")
        else:
            ax.yaxis.get_major_locator().set_params(integer=True)
        ax.set_ylabel("jobs (arrival order)", fontsize="small")
        ax.set_title(plot_title(run.label), fontsize="small", loc="left")
    axes[-1, 0].set_xlabel(_time_label("time since the first arrival", unit), fontsize="small")
    _clip_note(axes[0, 0], clip, end, unit, panel=False)
    bar = fig.colorbar(ScalarMappable(norm=norm, cmap=cmap), ax=axes[:, 0].tolist(), ticks=ticks)
    bar.ax.yaxis.set_minor_formatter(NullFormatter())  # a log scale's minor ticks unlabelled: only the ticks named
    bar.ax.set_yticklabels([f"{t:,}" for t in ticks])
    bar.set_label(value.replace("_", " "), fontsize="small")
    _suptitle(fig, title, clip, end)
    header = ("series", "job_id", f"start_{unit.symbol}", f"end_{unit.symbol}", value)
    return save(fig, path), write_csv(path.with_suffix(".csv"), header, rows)


def changed_jobs(segments: Stretches) -> tuple[int, int]:
    """(jobs whose value changed over their life, jobs)."""
    values: dict[str, set[int]] = {}
    for job, _a, _b, v in segments:
        values.setdefault(job, set()).add(v)
    return sum(len(v) > 1 for v in values.values()), len(values)


def plot_job_gpus(resized: Sequence[tuple[RunData, Stretches]], path: Path) -> Figure:
    """Each job's GPUs over time (:func:`job_bars`): where an elastic policy (Optimus, ANDREAS's moldable jobs)
    grows and shrinks jobs. One panel per run with resized jobs, at most :data:`JOB_GPUS_MAX_RUNS`."""
    shown = list(resized)[:JOB_GPUS_MAX_RUNS]
    runs = [run for run, _ in shown]
    png, csv = job_bars(shown, path, "gpus", "GPUs of each job over time")
    summary = [f"{run.label}: {'{} of {}'.format(*changed_jobs(segs))} jobs resized" for run, segs in shown]
    caption = (
        "Each job's GPUs over time since the first arrival: one row per job in arrival order, a bar for every "
        "stretch it held a constant number of GPUs, coloured by that number (gaps: waiting or preempted). Look for "
        "long jobs shrunk while short ones arrive and grown again after: the elastic policy trading one job's speed "
        f"for another's. {'; '.join(summary)}."
    )
    if len(resized) > len(shown):
        caption += f" Drawn: the first {len(shown)} of {len(resized)} runs with resized jobs."
    clip, end = activity_horizon(runs)
    return Figure(png, caption + _clip_sentence(runs, clip, end), csv)


def plot_runs(runs: Sequence[RunData], out_dir: Path) -> list[Figure]:
    """Every cluster plot of the runs into ``out_dir``, identical runs merged first; the sharing figure only when
    some run is a shared run (whole-GPU reports stay as they were)."""
    out_dir = Path(out_dir)
    merged = merge_identical(runs)
    figures = [
        plot_jct_cdf(merged, out_dir / "jct_cdf.png"),
        plot_completed_over_time(merged, out_dir / "completed_jobs.png"),
        plot_busy_gpus(merged, out_dir / "busy_gpus.png"),
        plot_gru_cdf(merged, out_dir / "gru_cdf.png"),
        plot_power(merged, out_dir / "power.png"),
    ]
    if any(run.sharing is not None for run in merged):
        figures.append(plot_sharing(merged, out_dir / "sharing_over_time.png"))
    resized = resized_runs(merged)
    if resized:
        figures.append(plot_job_gpus(resized, out_dir / "job_gpus.png"))
    return figures


#: sweep grid fields that name what ran (shown bare in a group's label, and picking its colour family)
SWEEP_NAME_FIELDS = ("policy", "algo", "mode", "placement")


def sweep_group_label(values: dict[str, Any], name_field: str | None = None) -> str:
    """A sweep group's label, as runs are labelled (:func:`gpuweave.report.rundir.label_runs`): the ``name_field``
    value bare (``fifo``), every other field ``key=value`` (``round_length=30``) or ``key unset`` for a null,
    at most :data:`gpuweave.report.rundir.LABEL_MAX` characters."""
    parts = [_short(values[name_field])] if name_field and values.get(name_field) is not None else []
    parts += [config_part(k, None if _missing(v) else v) for k, v in values.items() if k != name_field or _missing(v)]
    text = " ".join(parts)
    return text if len(text) <= LABEL_MAX else text[: LABEL_MAX - 1].rstrip() + "\u2026"


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def family_colours(families: Sequence[str]) -> list[tuple[Any, int]]:
    """(colour, family index) per series: one palette colour per family (a policy), its members in shades of it,
    the first full, the others lighter (mixed with white up to 60%)."""
    order = list(dict.fromkeys(families))
    sizes = {f: families.count(f) for f in order}
    seen: dict[str, int] = {}
    out = []
    for family in families:
        k = seen.get(family, 0)
        seen[family] = k + 1
        index = order.index(family)
        base = PALETTE[index % len(PALETTE)]
        rgb = [int(base[j : j + 2], 16) / 255 for j in (1, 3, 5)]
        mix = 0.6 * k / max(sizes[family] - 1, 1)
        out.append((tuple(c + (1 - c) * mix for c in rgb), index))
    return out


def plot_sweep_aggregate(
    df: Any,
    path: Path,
    *,
    x: str | None,
    y: str = "avg_jct_s",
    groups: Sequence[str] = ("policy",),
) -> Figure:
    """Mean of ``y`` (over seeds and any other field not in ``groups``) against ``x``, one line per group.

    ``df`` is a pandas DataFrame of sweep rows. With ``x=None`` draws bars, one per group. The error bars
    are the standard deviation across the averaged rows.
    """
    fig, axes = figure(height=4.6)
    ax = axes[0, 0]
    groups = [g for g in groups if g in df.columns and g != x]
    data = df[np.isfinite(df[y].to_numpy(dtype=float))]
    # each group reads like a run's label: the policy (or algo, mode, placement) bare, other grid fields as
    # key=value, a null grid value (the field's default) as "key unset" (not "null"); the policy picks the colour
    # family, the other fields a shade of it
    family_field = next((g for g in groups if g in SWEEP_NAME_FIELDS), None)
    if groups:
        records = data[groups].astype(object).where(data[groups].notna(), None).to_dict(orient="records")
        keyed = data.assign(_group=[sweep_group_label(r, family_field) for r in records])
        families = [_short(r[family_field]) if family_field else "" for r in records]
    else:
        keyed = data.assign(_group="all")
        families = [""] * len(data)
    names = list(dict.fromkeys(keyed["_group"]))
    family_of = dict(zip(keyed["_group"], families))
    ylabel = f"mean {y}"
    scale, unit = 1.0, ""
    own = time_metric_unit(y)
    if own is not None:  # a time: the axis in the unit its largest mean calls for, as the tables would show it
        by = ["_group", *([x] if x else [])]
        drawn = keyed.groupby(by, sort=False, dropna=False)[y].mean().to_numpy(dtype=float) * own.seconds
        axis = axis_unit(drawn)
        scale, unit = axis.seconds / own.seconds, axis.symbol
        ylabel = f"mean {y.removesuffix('_ms').removesuffix('_s')} ({unit})"
    colours = family_colours([family_of[n] for n in names])
    rows = []
    if x is None:
        means = [keyed.loc[keyed["_group"] == g, y].mean() / scale for g in names]
        stds = [keyed.loc[keyed["_group"] == g, y].std(ddof=0) / scale for g in names]
        ax.bar(
            range(len(names)),
            means,
            yerr=stds,
            color=[c for c, _ in colours],
            edgecolor=[PALETTE[f % len(PALETTE)] for _, f in colours],
            linewidth=1.0,
            capsize=3,
        )
        ax.set_xticks(range(len(names)), [plot_text(n) for n in names], rotation=30, ha="right")
        rows = [(n, "", m, s) for n, m, s in zip(names, means, stds)]
    else:
        for i, name in enumerate(names):
            part = keyed[keyed["_group"] == name]
            stats = part.groupby(x, sort=True)[y].agg(["mean", "std", "count"])
            std = stats["std"].fillna(0.0).to_numpy() / scale
            xs, ms = stats.index.to_numpy(dtype=float), stats["mean"].to_numpy() / scale
            colour, family = colours[i]
            shade = sum(1 for c, f in colours[:i] if f == family)
            style = {"color": colour, "linestyle": LINESTYLES[shade % len(LINESTYLES)]}
            ax.errorbar(xs, ms, yerr=std, marker="o", capsize=3, label=plot_text(name), **style)
            rows += [(name, a, b, c) for a, b, c in zip(xs, ms, std)]
        ax.set_xlabel(plot_text(x))
        legend_outside(ax, len(names))
    ax.set_ylabel(plot_text(ylabel))
    title = f"{ylabel} per " + (" + ".join(groups) if groups else "sweep")
    ax.set_title(plot_title(title))
    stats = ("mean", "std") if not unit else (f"mean_{unit}", f"std_{unit}")
    csv = write_csv(path.with_suffix(".csv"), ("group", x or "", *stats), rows)
    caption = (
        f"The {ylabel} of each group of sweep cells"
        + (f" against {x}" if x else "")
        + ", averaged over seeds; the error bars are one standard deviation across the averaged cells."
    )
    return Figure(save(fig, path), caption, csv)
